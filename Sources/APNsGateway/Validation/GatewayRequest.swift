/// One complete request as it arrived on a stream: pseudo-headers, every header in order (duplicates kept) and
/// the body bytes (kept up to a cap; the full length is always counted).
struct GatewayRequest: Sendable {
    var method: String?
    var path: String?
    /// Regular (non-pseudo) headers in arrival order, names lowercase as HTTP/2 requires.
    var headers: [(name: String, value: String)]
    /// The body, truncated to ``bodyCap`` bytes.
    var body: [UInt8]
    /// The total number of body bytes received.
    var bodyLength: Int

    /// The most body bytes ever kept: the voip limit plus one, enough to tell "too large" apart.
    static let bodyCap = 5121

    /// The values of a header by name.
    func values(_ name: String) -> [String] {
        self.headers.filter { $0.name == name }.map(\.value)
    }

    /// The single value of a header, or `nil` when absent.
    func value(_ name: String) -> String? {
        self.headers.first { $0.name == name }?.value
    }
}

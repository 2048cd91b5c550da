/// The one rule for an APNs device token, wherever a token is accepted: a card's APNs address's device token
/// (docs/PROTOCOL.md §11.1), `e2ee-send keygen|device request|card|relay register --device-token`, a send's
/// `--device-token` override, the APNs client before it sends, the relay's registration, the filter's
/// `--device-token`.
///
/// 64 to 200 hex digits, an even count (32 to 100 bytes): tokens are 32 bytes today, and Apple says not to assume a
/// length. Either case is accepted; ``normalized(_:)`` gives the lowercase form a token is compared and sent in.
/// (Each place used to have its own rule: `keygen --device-token` with 16 digits passed the first check and was then
/// refused by the card's.)
public enum DeviceToken: Sendable {
    /// How many hex digits a token has.
    public static let hexDigits = 64...200

    /// The rule, for messages.
    public static let rule =
        "an APNs device token is 64 to 200 hex digits, an even count (64 for today's 32-byte tokens)"

    /// What is wrong with `token`, or nil when it is a device token: the rule and the first thing that breaks it
    /// ("character 3 is not a hex digit", "got only 16 digits", ...). Inlinable: every push the APNs client sends
    /// is checked, and the generic entry point cost about 3 µs of it.
    @inlinable
    public static func problem(_ token: some StringProtocol) -> String? {
        var count = 0
        for byte in token.utf8 {
            count += 1
            guard Self.isHexDigit(byte) else { return "\(Self.rule); character \(count) is not a hex digit" }
        }
        if count < Self.hexDigits.lowerBound { return "\(Self.rule); got only \(count) digits" }
        if count > Self.hexDigits.upperBound { return "\(Self.rule); got \(count) digits" }
        if count % 2 != 0 { return "\(Self.rule); got an odd count (\(count))" }
        return nil
    }

    /// `token` in lowercase, or nil when it is not a device token.
    public static func normalized(_ token: some StringProtocol) -> String? {
        Self.problem(token) == nil ? token.lowercased() : nil
    }

    @inlinable
    static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default: false
        }
    }
}

/// The version every executable of this package prints for `--version`.
///
/// One constant for the four binaries (`e2ee-send`, `e2ee-filter`, `e2ee-gateway`, `e2ee-relay`), so an operator
/// comparing a relay with the senders and devices in front of it compares one number. The wire format has its own
/// version (docs/PROTOCOL.md); this one names the release of the code.
public enum ToolVersion: Sendable {
    /// `major.minor.patch` of this release.
    public static let current = "0.9.0"
}

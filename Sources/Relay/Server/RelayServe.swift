import CLISupport
import Foundation
public import Logging

/// What `e2ee-relay serve` says about itself: its logger and its start line (``buildApplication(_:logger:)`` builds
/// the relay itself).
public enum RelayServe: Sendable {
    /// The logger the options ask for: text or JSON lines on standard error, at `--log-level`.
    public static func logger(_ options: ServeOptions) -> Logger {
        var logger =
            options.logFormat == "json"
            ? Logger(label: "e2ee-relay") { JSONLogHandler(label: $0) }
            : Logger(label: "e2ee-relay") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = Logger.Level(rawValue: options.logLevel) ?? .info
        return logger
    }

    /// The one line that says what this relay is: version, store (without a password), push services (APNs:
    /// where, topics), workers, limits.
    static func startLine(
        _ options: ServeOptions,
        storeKinds: [any RelayStoreKind] = RelayStoreKinds.all,
        pushServices: [any RelayPushServiceKind] = RelayPushServiceKinds.all
    ) -> String {
        let store =
            RelayStoreKinds.kind(for: options.database, in: storeKinds)?.startDescription(
                options.database,
                options: options
            ) ?? options.database
        let services = pushServices.map { $0.startDescription(options) }.joined(separator: "; ")
        let limits = options.connections
        func seconds(_ duration: Duration) -> String {
            let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
            return value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
        }
        return "e2ee-relay \(ToolVersion.current) starting: store \(store); \(services); "
            + "\(options.workers) delivery workers; rates "
            + "\(Int(options.recipientRate))/min per recipient, \(Int(options.tokenRate))/min per token; connections at "
            + "most \(limits.maximumConnections), handshake \(seconds(limits.handshakeTimeout)), request head "
            + "\(seconds(limits.requestHeadTimeout)), idle \(seconds(limits.idleTimeout)), request "
            + "\(seconds(limits.requestTimeout))"
    }

    /// A database URL with its password replaced by `***`.
    static func withoutPassword(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? url
    }
}

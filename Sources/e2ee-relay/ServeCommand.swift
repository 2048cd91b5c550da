import ArgumentParser
import Configuration
import Foundation
import Logging
import Relay

/// `e2ee-relay serve`: parses the flags (each optional, so that the environment and the file can set what a flag
/// does not), then runs what the library builds (``buildApplication(_:logger:)``).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the relay API over HTTPS and deliver queued pushes to APNs until SIGTERM.",
        discussion: """
            Every option can also be set in the environment, as E2EE_RELAY_<OPTION> (--apns-key-id is \
            E2EE_RELAY_APNS_KEY_ID; a list is comma-separated), or in a JSON file given with --config (or \
            E2EE_RELAY_CONFIG): an object keyed by the option names without dashes, e.g. {"apns-topic": \
            ["com.example.app"], "workers": 4}. A flag wins over the environment, which wins over the file, which \
            wins over the default. Secrets are files (--apns-key-file, --tls-key), never values. SIGHUP reads \
            --tls-cert and --tls-key again without dropping connections. Exit codes: 0 graceful shutdown, 1 cannot \
            start (TLS, APNs key, bind), 64 bad arguments or configuration, 69 the database cannot be opened or reached.
            """
    )

    @Option(help: "A JSON file of options (see below); default: $E2EE_RELAY_CONFIG.")
    var config: String?

    @Option(help: ArgumentHelp("The store: \(RelayStoreKinds.argumentHelp). Default relay.sqlite."))
    var database: String?

    @Option(
        name: .customLong("database-timeout"),
        help: "Seconds a PostgreSQL operation may take before the request is answered 503. Default 5."
    )
    var databaseTimeout: Double?

    @Option(help: "The address to listen on. Default 127.0.0.1.")
    var host: String?

    @Option(help: "The port (0 = any free port; see --port-file). Default 8443.")
    var port: Int?

    @Option(name: .customLong("port-file"), help: "Write the bound port to this file once listening.")
    var portFile: String?

    @Option(name: .customLong("tls-cert"), help: "PEM certificate chain of the server (read again on SIGHUP).")
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: "PEM private key of the server, mode 0600 (read again on SIGHUP).")
    var tlsKey: String?

    @Option(
        name: .customLong("self-signed-tls-dir"),
        help: "Make a throwaway loopback CA instead; its certificate is written to <dir>/ca.pem (never over another's)."
    )
    var selfSignedTLSDir: String?

    @Option(
        name: .customLong("apns-key-file"),
        help: "The APNs .p8 key (mode 0600); default: the file $APNS_KEY_PATH names."
    )
    var apnsKeyFile: String?

    @Option(name: .customLong("apns-key-id"), help: "The .p8 key's id (required).")
    var apnsKeyID: String?

    @Option(name: .customLong("apns-team-id"), help: "The team id (required).")
    var apnsTeamID: String?

    @Option(
        name: .customLong("apns-environment"),
        help: "Apple's APNs environments to deliver to (repeatable). Default both: production, development."
    )
    var apnsEnvironment: [String] = []

    @Option(
        name: .customLong("apns-topic"),
        help: "The app's bundle id (repeatable, required): push addresses for other topics are refused."
    )
    var apnsTopic: [String] = []

    @Option(
        name: .customLong("apns-url"),
        help: "An APNs-compatible server instead of Apple's (e2ee-gateway); serves both environments."
    )
    var apnsURL: String?

    @Option(name: .customLong("apns-ca"), help: "PEM CA certificate that --apns-url's TLS certificate chains to.")
    var apnsCA: String?

    @Option(
        name: .customLong("apns-connect-timeout"),
        help: "Seconds to wait for a connection to APNs; a push waiting for one is retried after it. Default 10."
    )
    var apnsConnectTimeout: Int?

    @Option(
        name: .customLong("apns-stream-timeout"),
        help:
            "Seconds to wait for APNs' answer to a push, then queue it again (--lease-seconds must be longer). Default 10."
    )
    var apnsStreamTimeout: Int?

    @Option(help: "Delivery workers. Default 4.")
    var workers: Int?

    @Option(
        name: .customLong("lease-seconds"),
        help: "How long a leased push is held before another worker may take it. Default 60."
    )
    var leaseSeconds: Int?

    @Option(
        name: .customLong("recipient-rate"),
        help: "Pushes a minute per recipient user (burst: half, at least 16). Default 120."
    )
    var recipientRate: Double?

    @Option(
        name: .customLong("token-rate"),
        help:
            "Pushes a minute per delivery token, at most its share of its recipient's (burst: half, at least 16). Default 60."
    )
    var tokenRate: Double?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error, critical. Default info.")
    var logLevel: String?

    @Option(name: .customLong("log-format"), help: "text, or json (one object per line). Default text.")
    var logFormat: String?

    @Option(
        name: .customLong("max-connections"),
        help: "Most client connections at once; at the cap the one idle longest is closed. Default: the fd limit - 64."
    )
    var maxConnections: Int?

    @Option(
        name: .customLong("tls-handshake-timeout"),
        help: "Seconds from accept to a finished handshake. Default 10."
    )
    var tlsHandshakeTimeout: Double?

    @Option(
        name: .customLong("request-head-timeout"),
        help: "Seconds from the handshake to the first complete request head. Default 10."
    )
    var requestHeadTimeout: Double?

    @Option(
        name: .customLong("idle-timeout"),
        help: "Seconds a connection may stay open with no request in progress. Default 75."
    )
    var idleTimeout: Double?

    @Option(name: .customLong("request-timeout"), help: "Seconds from a request's head to its answer. Default 30.")
    var requestTimeout: Double?

    @Option(name: .customLong("metrics-host"), help: "Serve /metrics on a listener of its own (with --metrics-port).")
    var metricsHost: String?

    @Option(
        name: .customLong("metrics-port"),
        help: "The port of the metrics listener (plain HTTP; /metrics leaves the API then). Default host 127.0.0.1."
    )
    var metricsPort: Int?

    /// The flags given, by option name.
    var flags: [String: ConfigContent] {
        var flags: [String: ConfigContent] = [:]
        func add(_ name: String, _ value: String?) { if let value { flags[name] = .string(value) } }
        func add(_ name: String, _ value: Int?) { if let value { flags[name] = .int(value) } }
        func add(_ name: String, _ value: Double?) { if let value { flags[name] = .double(value) } }
        func add(_ name: String, _ value: [String]) { if !value.isEmpty { flags[name] = .stringArray(value) } }
        add("database", self.database)
        add("database-timeout", self.databaseTimeout)
        add("host", self.host)
        add("port", self.port)
        add("port-file", self.portFile)
        add("tls-cert", self.tlsCert)
        add("tls-key", self.tlsKey)
        add("self-signed-tls-dir", self.selfSignedTLSDir)
        add("apns-key-file", self.apnsKeyFile)
        add("apns-key-id", self.apnsKeyID)
        add("apns-team-id", self.apnsTeamID)
        add("apns-environment", self.apnsEnvironment)
        add("apns-topic", self.apnsTopic)
        add("apns-url", self.apnsURL)
        add("apns-ca", self.apnsCA)
        add("apns-connect-timeout", self.apnsConnectTimeout)
        add("apns-stream-timeout", self.apnsStreamTimeout)
        add("workers", self.workers)
        add("lease-seconds", self.leaseSeconds)
        add("recipient-rate", self.recipientRate)
        add("token-rate", self.tokenRate)
        add("log-level", self.logLevel)
        add("log-format", self.logFormat)
        add("max-connections", self.maxConnections)
        add("tls-handshake-timeout", self.tlsHandshakeTimeout)
        add("request-head-timeout", self.requestHeadTimeout)
        add("idle-timeout", self.idleTimeout)
        add("request-timeout", self.requestTimeout)
        add("metrics-host", self.metricsHost)
        add("metrics-port", self.metricsPort)
        return flags
    }

    func run() async throws {
        let options: ServeOptions
        do throws(RelayError) {
            options = try ServeOptions.resolve(
                flags: self.flags,
                environment: ProcessInfo.processInfo.environment,
                configFile: self.config
            )
        } catch {
            FileHandle.standardError.write(Data("e2ee-relay serve: error: \(error.message)\n".utf8))
            throw ExitCode(64)
        }
        let logger = RelayServe.logger(options)
        do {
            try await buildApplication(options, logger: logger).runService()
        } catch let failure as RelayStartError {
            logger.critical("e2ee-relay cannot start: \(failure.error.message)")
            throw ExitCode(failure.step == .setup ? 1 : failure.error.code == .configuration ? 64 : 69)
        }
    }
}

import APNsGateway
public import ArgumentParser
import ConnectionGuard
import Foundation
public import Logging
import PushTransport
import ServiceLifecycle

/// `e2ee-gateway serve`: runs the gateway until SIGTERM or SIGINT.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the gateway until SIGTERM/SIGINT; accepted pushes go to stdout (JSON lines) or a spool.",
        discussion: """
            Writes ca.pem (what clients trust) and server.pem into --tls-dir, then the bound port into \
            --port-file, and prints one "listening" line on stderr. Logs go to stderr.
            \(GatewayCommand.exitCodes)
            """
    )

    @Option(help: "The address to bind.")
    var host = "127.0.0.1"

    @Option(help: "The port to bind; 0 picks a free one (see --port-file).")
    var port = 0

    @Option(name: .customLong("port-file"), help: "Write the bound port here (atomically) once listening.")
    var portFile: String?

    @Option(name: .customLong("tls-dir"), help: "Where ca.pem and server.pem are written.")
    var tlsDir: String

    @Option(name: .customLong("topic"), help: "An allowed bundle id (repeatable).")
    var topics: [String] = []

    @Option(
        name: .customLong("provider-key"),
        help: "TEAMID:KEYID:FILE, a P-256 public key or .p8 in PEM (repeatable)."
    )
    var providerKeys: [String] = []

    @Option(help: "Append accepted pushes to this spool file (fsync'd before each 200) instead of stdout.")
    var spool: String?

    @Option(help: "Which APNs the gateway imitates.")
    var environment: APNsEnvironment = .development

    @Option(name: .customLong("max-concurrent-streams"), help: "Stream limit after the first valid token.")
    var maxConcurrentStreams = 1000

    @Flag(name: .customLong("strict-devices"), help: "Refuse tokens not given with --device (400 BadDeviceToken).")
    var strictDevices = false

    @Option(name: .customLong("device"), help: "A registered device token (hex, repeatable).")
    var devices: [String] = []

    @Option(name: .customLong("unregistered"), help: "A token answered 410 Unregistered (hex, repeatable).")
    var unregistered: [String] = []

    @Option(name: .customLong("fault-seed"), help: "Seed for fault injection.")
    var faultSeed: UInt64 = 0

    @Option(name: .customLong("fault-429-rate"), help: "Share of valid pushes answered 429 TooManyRequests.")
    var rate429 = 0.0

    @Option(name: .customLong("fault-500-rate"), help: "Share of valid pushes answered 500 InternalServerError.")
    var rate500 = 0.0

    @Option(name: .customLong("fault-503-rate"), help: "Share of valid pushes answered 503 ServiceUnavailable.")
    var rate503 = 0.0

    @Option(name: .customLong("fault-silent-rate"), help: "Share of valid pushes never answered.")
    var silentRate = 0.0

    @Option(name: .customLong("fault-delay-ms"), help: "Delay every answer by this many milliseconds.")
    var delayMs = 0

    @Option(name: .customLong("fault-drop-streams-after"), help: "Lower the stream limit after N streams.")
    var dropAfter: Int?

    @Option(name: .customLong("fault-drop-streams-to"), help: "The lowered stream limit (default 1).")
    var dropTo = 1

    @Option(name: .customLong("fault-goaway-after"), help: "Send GOAWAY after N streams per connection.")
    var goAwayAfter: Int?

    @Option(name: .customLong("fault-goaway-reason"), help: "The GOAWAY JSON reason.")
    var goAwayReason = "Shutdown"

    @Option(name: .customLong("log-level"), help: "How much to log on stderr.")
    var logLevel: Logger.Level = .info

    @Option(
        name: .customLong("max-connections"),
        help:
            "Most connections open at once (default: the fd limit less 64); at the cap the longest idle one is closed."
    )
    var maxConnections: Int?

    @Option(name: .customLong("tls-handshake-timeout"), help: "Seconds from accept to a finished TLS handshake.")
    var handshakeTimeout = 60.0

    @Option(
        name: .customLong("request-head-timeout"),
        help: "Seconds from the TLS handshake to the first request's HEADERS."
    )
    var requestHeadTimeout = 60.0

    @Option(name: .customLong("idle-timeout"), help: "Seconds a connection may stay open with no request in progress.")
    var idleTimeout = 3600.0

    @Option(name: .customLong("request-timeout"), help: "Seconds from a request's HEADERS to its last byte.")
    var requestTimeout = 120.0

    func validate() throws {
        guard !self.topics.isEmpty else {
            throw ValidationError("give at least one --topic (the app's bundle id, e.g. com.example.app)")
        }
        guard !self.providerKeys.isEmpty else {
            throw ValidationError("give at least one --provider-key TEAMID:KEYID:FILE (see `provider-key`)")
        }
        for key in self.providerKeys where key.split(separator: ":", maxSplits: 2).count != 3 {
            throw ValidationError("--provider-key \(key) is not TEAMID:KEYID:FILE")
        }
        for token in self.devices + self.unregistered
        where token.isEmpty || token.count % 2 != 0 || !token.allSatisfy({ $0.isASCII && $0.isHexDigit }) {
            throw ValidationError("device token \(token) is not hex")
        }
    }

    func run() async throws {
        // Logs go to stderr: stdout carries only delivery lines.
        var logger = Logger(label: "e2ee-gateway") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = self.logLevel
        let configuration: GatewayConfiguration
        let sink: any DeliverySink
        do {
            configuration = try self.makeConfiguration()
            sink = try self.makeSink()
            try configuration.validate()
        } catch {
            Diagnostics.say("error: \(error.message)")
            throw error.code == .invalidConfiguration ? GatewayExit.usage : GatewayExit.cannotStart
        }
        let server = APNsGatewayServer(configuration: configuration, sink: sink, logger: logger)
        let port: Int
        do {
            port = try await server.start()
        } catch {
            Diagnostics.say("error: \((error as? GatewayError)?.message ?? "\(error)")")
            throw GatewayExit.cannotStart
        }
        if let portFile = self.portFile {
            do {
                try PortFile.write(port, to: portFile)
            } catch {
                Diagnostics.say("error: \(error.message)")
                try? await server.shutdown()
                throw GatewayExit.cannotCreate
            }
        }
        Diagnostics.say(
            "listening on https://\(self.host):\(port) (\(self.environment.rawValue)); trust \(server.caCertificatePath); "
                + "deliveries to \(self.spool ?? "stdout")"
        )
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [server],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
        Diagnostics.say("stopped")
    }

    private func makeSink() throws(GatewayError) -> any DeliverySink {
        guard let spool = self.spool else { return StdoutSink() }
        return try SpoolFileSink(path: spool)
    }

    private func makeConfiguration() throws(GatewayError) -> GatewayConfiguration {
        var keys: [RegisteredProviderKey] = []
        for spec in self.providerKeys {
            let parts = spec.split(separator: ":", maxSplits: 2).map(String.init)
            keys.append(try RegisteredProviderKey(teamID: parts[0], keyID: parts[1], pemFile: parts[2]))
        }
        var devices = DeviceRegistry(requiresRegistration: self.strictDevices)
        for token in self.devices { devices.register(token) }
        let now = Date()
        for token in self.unregistered { devices.markUnregistered(token, at: now) }
        var configuration = GatewayConfiguration(
            host: self.host,
            port: self.port,
            tlsDirectory: self.tlsDir,
            environment: self.environment,
            topics: Set(self.topics),
            providerKeys: keys,
            devices: devices,
            maxConcurrentStreams: self.maxConcurrentStreams,
            faults: FaultInjection(
                seed: self.faultSeed,
                tooManyRequestsRate: self.rate429,
                internalServerErrorRate: self.rate500,
                serviceUnavailableRate: self.rate503,
                silentRate: self.silentRate,
                responseDelay: .milliseconds(self.delayMs),
                streamLimitDrop: self.dropAfter.map {
                    FaultInjection.StreamLimitDrop(afterStreams: $0, maxConcurrentStreams: self.dropTo)
                },
                goAway: self.goAwayAfter.map { FaultInjection.GoAway(afterStreams: $0, reason: self.goAwayReason) }
            )
        )
        configuration.connections = ConnectionLimits(
            handshakeTimeout: .seconds(self.handshakeTimeout),
            requestHeadTimeout: .seconds(self.requestHeadTimeout),
            idleTimeout: .seconds(self.idleTimeout),
            requestTimeout: .seconds(self.requestTimeout),
            maximumConnections: self.maxConnections ?? ConnectionLimits.defaultMaximumConnections()
        )
        return configuration
    }
}

extension APNsEnvironment: ExpressibleByArgument {}
extension Logger.Level: @retroactive ExpressibleByArgument {}

import CLISupport
import ConnectionGuard
import Foundation
public import Logging
import NIOSSL
import Sender
import ServiceLifecycle

/// `e2ee-relay serve` as a library call: opens the store, makes the APNs clients, runs the HTTPS server, the delivery
/// workers, the metrics listener and the certificate reloader until SIGTERM or SIGINT, then drains (docs/RELAY.md).
public enum RelayServe: Sendable {
    /// Why the relay could not start, with the exit status `e2ee-relay serve` uses.
    public struct StartError: Error, Sendable {
        public let error: RelayError
        /// 1 (TLS, APNs key, bind), 64 (a malformed database URL), 69 (the database cannot be opened or reached).
        public let exitCode: Int32
    }

    /// The logger the options ask for: text or JSON lines on standard error, at `--log-level`.
    public static func logger(_ options: ServeOptions) -> Logger {
        var logger =
            options.logFormat == "json"
            ? Logger(label: "e2ee-relay") { JSONLogHandler(label: $0) }
            : Logger(label: "e2ee-relay") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = Logger.Level(rawValue: options.logLevel) ?? .info
        return logger
    }

    /// Serves until SIGTERM/SIGINT, then drains: readiness answers `draining`, the server answers what it has read and
    /// closes its connections, the workers record the batch in flight.
    ///
    /// - Throws: ``StartError`` when the relay cannot start.
    public static func run(_ options: ServeOptions, logger: Logger) async throws(StartError) {
        let files: RelayTLS.Files?
        var configuration: RelayConfiguration
        let key: APNsSigningKey
        do throws(RelayError) {
            let server: TLSConfiguration
            if let directory = options.selfSignedTLSDir {
                files = nil
                server = try RelayTLS.selfSigned(directory: directory).0
            } else {
                let pair = try RelayTLS.Files(certificatePath: options.tlsCert ?? "", keyPath: options.tlsKey ?? "")
                files = pair
                server = pair.configuration
            }
            configuration = RelayConfiguration(database: .init(argument: options.database), tls: server)
            do throws(APNsError) {
                if let path = options.apnsKeyFile {
                    key = try APNsSigningKey.load(path: path)
                } else {
                    key = try APNsSigningKey.load()
                }
            } catch {
                throw RelayError(.configuration, error.message)
            }
        } catch {
            throw StartError(error: error, exitCode: 1)
        }
        configuration.host = options.host
        configuration.port = options.port
        configuration.portFile = options.portFile
        configuration.policy.recipientRatePerMinute = options.recipientRate
        configuration.policy.recipientBurst = max(16, options.recipientRate / 2)
        configuration.policy.tokenRatePerMinute = options.tokenRate
        configuration.policy.tokenBurst = max(16, options.tokenRate / 2)
        configuration.policy.topics = Set(options.apnsTopics)
        configuration.delivery.workers = options.workers
        configuration.delivery.lease = .seconds(options.leaseSeconds)
        configuration.delivery.topics = Set(options.apnsTopics)
        configuration.connections = options.connections
        if let port = options.metricsPort { configuration.metricsListener = (options.metricsHost ?? "127.0.0.1", port) }

        // The store first: a locked or unreachable database stops the start before any connection is opened. It
        // stays open until the server and the workers have drained.
        do {
            try await RelayApplication.withStore(configuration.database, logger: logger) { store in
                try await Self.serve(
                    store: store,
                    configuration: configuration,
                    files: files,
                    key: key,
                    options,
                    logger
                )
            }
        } catch let error as StartError {
            throw error
        } catch let error as RelayError {
            throw StartError(error: error, exitCode: error.code == .configuration ? 64 : 69)
        } catch {
            // Opening a store throws only RelayError, and `serve` only StartError.
            throw StartError(error: RelayError(.storageUnavailable, "\(error)"), exitCode: 69)
        }
        logger.notice("e2ee-relay stopped; queued pushes stay in the store")
    }

    /// Makes the APNs clients and runs the server, the workers and the rest until SIGTERM or SIGINT, then drains.
    private static func serve(
        store: any RelayStore,
        configuration: RelayConfiguration,
        files: RelayTLS.Files?,
        key: APNsSigningKey,
        _ options: ServeOptions,
        _ logger: Logger
    ) async throws(StartError) {
        var configuration = configuration
        var clients: [APNsClient] = []
        do {
            var byEnvironment: [String: APNsClient] = [:]
            func client(_ environment: APNsEndpoint) throws -> APNsClient {
                APNsClient(
                    configuration: try APNsClientConfiguration(
                        environment: environment,
                        keyID: options.apnsKeyID,
                        teamID: options.apnsTeamID,
                        signingKey: key,
                        streamTimeout: .seconds(options.apnsStreamTimeout),
                        connectTimeout: .seconds(options.apnsConnectTimeout),
                        retryPolicy: .never
                    ),
                    logger: logger
                )
            }
            if let url = options.apnsURL {
                let one = try client(.custom(baseURL: url, trustedCAPEMPath: options.apnsCA))
                clients.append(one)
                byEnvironment = ["production": one, "development": one]
            } else {
                for name in Set(options.apnsEnvironments) {
                    let one = try client(name == "production" ? .production : .development)
                    clients.append(one)
                    byEnvironment[name] = one
                }
            }
            configuration.policy.environments = Set(byEnvironment.keys)

            let connections = ConnectionTracker(limits: configuration.connections)
            let metrics = RelayMetrics(connections: connections)
            let service = try RelayService(store: store, metrics: metrics, policy: configuration.policy, logger: logger)
            let delivery = DeliveryService(
                store: store,
                clients: byEnvironment,
                metrics: metrics,
                configuration: configuration.delivery,
                logger: logger
            )
            let app = try RelayApplication.make(
                service: service,
                delivery: delivery,
                configuration: configuration,
                connections: connections,
                logger: logger
            )
            logger.notice("\(Self.startLine(options, environments: byEnvironment.keys.sorted()))")
            var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: app)]
            if let files { services.append(.init(service: CertificateReloader(files: files, logger: logger))) }
            // Last, so that it hears of a shutdown first (a group stops its services in reverse order).
            services.append(.init(service: DrainingNotice(service: service)))
            let group = ServiceGroup(
                configuration: ServiceGroupConfiguration(
                    services: services,
                    gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger
                )
            )
            try await group.run()
            // The server has answered every request it read; connections it was still closing go before the process.
            await connections.waitUntilClosed(timeout: .seconds(5))
        } catch {
            for client in clients { await client.shutdown() }
            let message =
                switch error {
                case let error as RelayError: error.message
                case let error as APNsError: error.message
                default: "\(error); fix the cause above and start it again"
                }
            throw StartError(error: RelayError(.configuration, message), exitCode: 1)
        }
        for client in clients { await client.shutdown() }
    }

    /// The one line that says what this relay is: version, store (without a password), APNs, topics, workers, limits.
    static func startLine(_ options: ServeOptions, environments: [String]) -> String {
        let store: String
        switch RelayConfiguration.Database(argument: options.database) {
        case .sqlite(let path): store = "SQLite \(path)"
        case .postgres(let url): store = "PostgreSQL \(Self.withoutPassword(url))"
        }
        let apns =
            options.apnsURL.map { "\($0) (an APNs-compatible server)" }
            ?? "Apple (\(environments.joined(separator: ", ")))"
        let limits = options.connections
        func seconds(_ duration: Duration) -> String {
            let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
            return value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
        }
        return "e2ee-relay \(ToolVersion.current) starting: store \(store); APNs \(apns); topics "
            + "\(options.apnsTopics.joined(separator: ", ")); \(options.workers) delivery workers; rates "
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

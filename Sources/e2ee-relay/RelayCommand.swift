public import ArgumentParser
import CLISupport
import Foundation
public import Logging
import Relay
import Sender
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `e2ee-relay`: the app's push server between senders and APNs (docs/RELAY.md).
///
/// Exit codes: 0 success (or graceful shutdown on SIGTERM/SIGINT), 1 the relay could not start (TLS, APNs key,
/// bind), 64 bad arguments (a malformed database URL too), 69 the database cannot be opened or reached (PostgreSQL
/// down, SQLite folder missing or not writable, SQLite file locked by another relay).
@main
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "e2ee-relay",
        abstract: "The push relay: stores signed device lists, queues envelopes, delivers them to APNs.",
        discussion: RelayCommand.exitCodes,
        version: ToolVersion.current,
        subcommands: [ServeCommand.self]
    )

    /// The exit codes of `serve`, for `--help` (docs/RELAY.md lists the same).
    static let exitCodes =
        "Exit codes: 0 ok or graceful shutdown, 1 cannot start (TLS, APNs key, bind), 64 bad arguments, "
        + "69 the database cannot be opened or reached."

    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}

enum APNsEnvironmentName: String, ExpressibleByArgument, CaseIterable {
    case production, development
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// `e2ee-relay serve`.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the relay API over HTTPS and deliver queued pushes to APNs until SIGTERM.",
        discussion: RelayCommand.exitCodes
    )

    @Option(help: "The store: a SQLite file (created if missing) or a postgres:// URL.")
    var database = "relay.sqlite"

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port (0 = any free port; see --port-file).")
    var port = 8443

    @Option(name: .customLong("port-file"), help: "Write the bound port to this file once listening.")
    var portFile: String?

    @Option(name: .customLong("tls-cert"), help: "PEM certificate chain of the server.")
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: "PEM private key of the server (mode 0600).")
    var tlsKey: String?

    @Option(
        name: .customLong("self-signed-tls-dir"),
        help: "Make a throwaway loopback CA instead; its certificate is written to <dir>/ca.pem."
    )
    var selfSignedTLSDir: String?

    @Option(
        name: .customLong("apns-key-file"),
        help: "The APNs .p8 key (mode 0600); default: the file $APNS_KEY_PATH names."
    )
    var apnsKeyFile: String?

    @Option(name: .customLong("apns-key-id"), help: "The .p8 key's id.")
    var apnsKeyID: String

    @Option(name: .customLong("apns-team-id"), help: "The team id.")
    var apnsTeamID: String

    @Option(name: .customLong("apns-environment"), help: "Apple's APNs environments to deliver to (repeatable).")
    var apnsEnvironment: [APNsEnvironmentName] = [.production, .development]

    @Option(
        name: .customLong("apns-url"),
        help: "An APNs-compatible server instead of Apple's (e2ee-gateway); serves both environments."
    )
    var apnsURL: String?

    @Option(name: .customLong("apns-ca"), help: "PEM CA certificate that --apns-url's TLS certificate chains to.")
    var apnsCA: String?

    @Option(
        name: .customLong("apns-connect-timeout"),
        help: "Seconds to wait for a connection to APNs; a push waiting for one fails (and is retried) after it."
    )
    var apnsConnectTimeout = 10

    @Option(
        name: .customLong("apns-stream-timeout"),
        help: "Seconds to wait for APNs' answer to a push, then queue it again (--lease-seconds must be longer)."
    )
    var apnsStreamTimeout = 10

    @Option(help: "Delivery workers.")
    var workers = 2

    @Option(
        name: .customLong("lease-seconds"),
        help: "How long a leased push is held before another worker may take it."
    )
    var leaseSeconds = 60

    @Option(name: .customLong("recipient-rate"), help: "Pushes a minute per recipient user (burst: half, at least 16).")
    var recipientRate = 120.0

    @Option(name: .customLong("token-rate"), help: "Pushes a minute per delivery token (burst: half, at least 16).")
    var tokenRate = 60.0

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    func validate() throws {
        let files = self.tlsCert != nil || self.tlsKey != nil
        guard files != (self.selfSignedTLSDir != nil) else {
            throw ValidationError("give either --tls-cert and --tls-key, or --self-signed-tls-dir")
        }
        if files, self.tlsCert == nil || self.tlsKey == nil {
            throw ValidationError("--tls-cert and --tls-key go together")
        }
        guard (0...65535).contains(self.port) else { throw ValidationError("--port must be 0...65535") }
        guard self.workers >= 1 else { throw ValidationError("--workers must be at least 1") }
        guard self.apnsConnectTimeout >= 1 else { throw ValidationError("--apns-connect-timeout must be at least 1") }
        guard self.apnsStreamTimeout >= 1 else { throw ValidationError("--apns-stream-timeout must be at least 1") }
        // A lease must outlast a push in flight (the APNs client gives up on a stream after --apns-stream-timeout),
        // or a slow answer lets another worker send the same push again.
        guard self.leaseSeconds >= self.apnsStreamTimeout + 5 else {
            throw ValidationError(
                "--lease-seconds must be at least \(self.apnsStreamTimeout + 5) (5 s longer than the "
                    + "\(self.apnsStreamTimeout) s APNs stream timeout)"
            )
        }
        guard self.recipientRate > 0, self.tokenRate > 0 else { throw ValidationError("rates must be positive") }
        if self.apnsCA != nil, self.apnsURL == nil { throw ValidationError("--apns-ca needs --apns-url") }
    }

    func run() async throws {
        var logger = Logger(label: "e2ee-relay") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = self.logLevel
        do {
            try await self.serve(logger: logger)
        } catch let error as DatabaseStartError {
            logger.critical("e2ee-relay cannot start: \(error.error.message)")
            throw error.error.code == .configuration ? ExitCode(64) : ExitCode(69)
        } catch let error as RelayError {
            logger.critical("e2ee-relay cannot run: \(error.message)")
            throw ExitCode(1)
        } catch let error as APNsError {
            logger.critical("e2ee-relay cannot run: \(error.message)")
            throw ExitCode(1)
        } catch {
            logger.critical("e2ee-relay stopped: \(error); fix the cause above and start it again")
            throw ExitCode(1)
        }
    }

    private func serve(logger: Logger) async throws {
        let tls: RelayConfiguration.TLS
        if let dir = self.selfSignedTLSDir {
            tls = .selfSigned(directory: dir)
        } else {
            tls = .files(certificate: self.tlsCert!, key: self.tlsKey!)
        }
        var configuration = try RelayConfiguration(database: .init(argument: self.database), tls: tls.load())
        configuration.host = self.host
        configuration.port = self.port
        configuration.portFile = self.portFile
        configuration.policy.recipientRatePerMinute = self.recipientRate
        configuration.policy.recipientBurst = max(16, self.recipientRate / 2)
        configuration.policy.tokenRatePerMinute = self.tokenRate
        configuration.policy.tokenBurst = max(16, self.tokenRate / 2)
        configuration.delivery.workers = self.workers
        configuration.delivery.lease = .seconds(self.leaseSeconds)

        let key =
            if let path = self.apnsKeyFile { try APNsSigningKey.load(path: path) } else {
                try APNsSigningKey.load()
            }
        // The store first: a locked or unreachable database stops the start before any connection is opened.
        let store: any RelayStore
        do {
            store = try await RelayApplication.openStore(configuration.database, logger: logger)
        } catch {
            throw DatabaseStartError(error: error)
        }
        var clients: [APNsClient] = []
        do {
            var byEnvironment: [String: APNsClient] = [:]
            if let url = self.apnsURL {
                let client = APNsClient(
                    configuration: try APNsClientConfiguration(
                        environment: .custom(baseURL: url, trustedCAPEMPath: self.apnsCA),
                        keyID: self.apnsKeyID,
                        teamID: self.apnsTeamID,
                        signingKey: key,
                        streamTimeout: .seconds(self.apnsStreamTimeout),
                        connectTimeout: .seconds(self.apnsConnectTimeout),
                        retryPolicy: .never
                    ),
                    logger: logger
                )
                clients.append(client)
                byEnvironment = ["production": client, "development": client]
            } else {
                for name in Set(self.apnsEnvironment) {
                    let client = APNsClient(
                        configuration: try APNsClientConfiguration(
                            environment: name == .production ? .production : .development,
                            keyID: self.apnsKeyID,
                            teamID: self.apnsTeamID,
                            signingKey: key,
                            streamTimeout: .seconds(self.apnsStreamTimeout),
                            connectTimeout: .seconds(self.apnsConnectTimeout),
                            retryPolicy: .never
                        ),
                        logger: logger
                    )
                    clients.append(client)
                    byEnvironment[name.rawValue] = client
                }
            }
            configuration.policy.environments = Set(byEnvironment.keys)

            let metrics = RelayMetrics()
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
                logger: logger
            )
            let group = ServiceGroup(
                configuration: ServiceGroupConfiguration(
                    services: [.init(service: app)],
                    gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger
                )
            )
            try await group.run()
        } catch {
            for client in clients { await client.shutdown() }
            await store.close()
            throw error
        }
        for client in clients { await client.shutdown() }
        await store.close()
        logger.info("e2ee-relay stopped; queued pushes stay in the store")
    }
}

/// The store could not be opened at start (exit 69, or 64 for a malformed URL).
struct DatabaseStartError: Error {
    let error: RelayError
}

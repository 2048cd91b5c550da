import ConnectionGuard
import Foundation
public import Hummingbird
public import Logging
import NIOSSL
public import RelayClient
public import ServiceLifecycle

/// Why the relay could not start, by the step that failed; `e2ee-relay serve` turns it into its exit status.
public struct RelayStartError: Error, Sendable {
    public enum Step: Sendable, Hashable {
        /// TLS, a push service's credentials or clients (the APNs key), the listener, or anything else that stopped
        /// the relay with an error.
        case setup
        /// Opening, reaching or migrating the store: `configuration` for a malformed database URL, else
        /// `storage-unavailable`.
        case store
    }

    public let step: Step
    public let error: RelayError

    public init(_ step: Step, _ error: RelayError) {
        self.step = step
        self.error = error
    }

    /// A failure of a step other than the store's, with the message of the error that stopped the relay.
    static func setup(_ error: any Error) -> Self {
        let message =
            switch error {
            case let error as RelayError: error.message
            default: "\(error); fix the cause above and start it again"
            }
        return Self(.setup, RelayError(.configuration, message))
    }
}

/// The relay that `e2ee-relay serve` runs, built by ``buildApplication(_:logger:)``: the Hummingbird application and
/// the services beside it, run in one `ServiceGroup`, and what to close once that group has stopped.
public struct RelayApp: Service {
    /// The HTTPS API; the delivery workers and the metrics listener run as its services.
    public let application: any ApplicationProtocol
    /// What the group runs, in start order (it stops them in reverse): the PostgreSQL client, the application (after
    /// the store's startup), the certificate reloader, the draining notice.
    public let services: [ServiceGroupConfiguration.ServiceConfiguration]
    let connections: ConnectionTracker
    /// Shuts the push services' clients down and closes a SQLite store.
    let close: @Sendable () async -> Void
    let logger: Logger

    /// Runs until graceful shutdown (of the group it runs in; ``runService()`` makes one that SIGTERM and SIGINT stop),
    /// then drains: readiness answers `draining`, the server answers what it has read and closes its connections, the
    /// workers record the batch in flight, and the store closes last.
    ///
    /// - Throws: ``RelayStartError``.
    public func run() async throws {
        do {
            try await ServiceGroup(configuration: .init(services: self.services, logger: self.logger)).run()
        } catch {
            await self.close()
            if let error = error as? RelayStartError { throw error }
            throw RelayStartError.setup(error)
        }
        // The server has answered every request it read; connections it was still closing go before the process.
        await self.connections.waitUntilClosed(timeout: .seconds(5))
        await self.close()
        self.logger.notice("e2ee-relay stopped; queued pushes stay in the store")
    }

    /// Runs the relay until SIGTERM or SIGINT, then drains (as the Hummingbird template's `runService`).
    ///
    /// This is the process's own run, so it also sets the process's allocator policy (``AllocatorTuning``).
    public func runService() async throws {
        let allocator = AllocatorTuning.apply(environment: ProcessInfo.processInfo.environment)
        self.logger.debug(
            "allocator trim threshold",
            metadata: ["decision": "\(allocator)", "bytes": "\(AllocatorTuning.trimThreshold)"]
        )
        let group = ServiceGroup(
            configuration: .init(
                services: [self],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: self.logger
            )
        )
        try await group.run()
    }
}

/// Builds the relay `options` describe (docs/RELAY.md): checks TLS, opens each push service (its credentials and
/// clients), opens the store (SQLite: opened and migrated here; PostgreSQL: one connection tried here, migrated once
/// its client runs), makes the API service, the delivery workers, the HTTPS server, the metrics listener and the
/// certificate reloader. The store is the first of `storeKinds` that accepts `--database` (``RelayStoreKinds/all``
/// unless a test or an embedder gives its own); the relay delivers through `pushServices`
/// (``RelayPushServiceKinds/all`` unless one gives its own).
///
/// - Throws: ``RelayStartError``; nothing is left open when it throws.
public func buildApplication(
    _ options: ServeOptions,
    logger: Logger,
    storeKinds: [any RelayStoreKind] = RelayStoreKinds.all,
    pushServices: [any RelayPushServiceKind] = RelayPushServiceKinds.all
) async throws(RelayStartError) -> RelayApp {
    let files: RelayTLS.Files?
    var configuration: RelayConfiguration
    var opened: [OpenedPushService] = []
    func closeServices() async { for service in opened { await service.close() } }
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
        for kind in pushServices { opened.append(try await kind.open(options, logger: logger)) }
    } catch {
        await closeServices()
        throw RelayStartError(.setup, error)
    }
    configuration.host = options.host
    configuration.port = options.port
    configuration.portFile = options.portFile
    configuration.policy.recipientRatePerMinute = options.recipientRate
    configuration.policy.recipientBurst = max(16, options.recipientRate / 2)
    configuration.policy.tokenRatePerMinute = options.tokenRate
    configuration.policy.tokenBurst = max(16, options.tokenRate / 2)
    configuration.delivery.workers = options.workers
    configuration.delivery.lease = .seconds(options.leaseSeconds)
    configuration.connections = options.connections
    if let port = options.metricsPort { configuration.metricsListener = (options.metricsHost ?? "127.0.0.1", port) }

    // The store before any listener: a locked or unreachable database stops the start here.
    let openedStore: OpenedRelayStore
    do throws(RelayError) {
        guard let kind = RelayStoreKinds.kind(for: options.database, in: storeKinds) else {
            throw RelayError(
                .configuration,
                "--database \(options.database) names no store this relay can open; give "
                    + storeKinds.map(\.argumentHelp).joined(separator: ", or ")
            )
        }
        openedStore = try await kind.open(options.database, options: options, logger: logger)
    } catch {
        await closeServices()
        throw RelayStartError(.store, error)
    }
    let store = openedStore.store
    let closeStore = openedStore.close
    // The store's service (a connection pool) first in the group, so that the group stops it last. Its startup
    // (waiting for the server, migrating) is the first step of the application's service, which starts its server
    // and its workers only after it; its failure ends the group with the store's error, and the executable exits as
    // it does when the store cannot be opened.
    var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
    if let service = openedStore.service { services.append(.init(service: service)) }
    var startup: (@Sendable () async throws -> Void)?
    if let step = openedStore.startup {
        startup = { @Sendable () async throws in
            do throws(RelayError) { try await step() } catch { throw RelayStartError(.store, error) }
        }
    }

    do {
        let connections = ConnectionTracker(limits: configuration.connections)
        let metrics = RelayMetrics(connections: connections)
        let delivery = DeliveryService(
            store: store,
            deliverers: opened.map(\.deliverer),
            metrics: metrics,
            configuration: configuration.delivery,
            logger: logger
        )
        let service = try RelayService(
            store: store,
            metrics: metrics,
            policy: configuration.policy,
            services: opened.map(\.rules),
            handoff: delivery.handoff,
            logger: logger
        )
        let application = try RelayApplication.make(
            service: service,
            delivery: delivery,
            configuration: configuration,
            connections: connections,
            logger: logger
        )
        services.append(.init(service: AfterStartup(startup: startup, base: application)))
        if let files { services.append(.init(service: CertificateReloader(files: files, logger: logger))) }
        // Last, so that it hears of a shutdown first (a group stops its services in reverse order).
        services.append(.init(service: DrainingNotice(service: service)))
        logger.notice(
            "\(RelayServe.startLine(options, storeKinds: storeKinds, pushServices: pushServices))"
        )
        let pushes = opened
        return RelayApp(
            application: application,
            services: services,
            connections: connections,
            close: {
                for service in pushes { await service.close() }
                await closeStore()
            },
            logger: logger
        )
    } catch {
        await closeServices()
        await closeStore()
        throw RelayStartError.setup(error)
    }
}

/// Runs `startup` (when there is one), then `base`: the store's startup before the application's server and workers.
private struct AfterStartup<Base: Service>: Service {
    let startup: (@Sendable () async throws -> Void)?
    let base: Base

    func run() async throws {
        try await self.startup?()
        try await self.base.run()
    }
}

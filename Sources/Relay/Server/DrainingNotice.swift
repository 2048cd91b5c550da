public import ServiceLifecycle

/// Marks the relay as draining as soon as graceful shutdown starts, before the server is told to stop: readiness
/// answers 503 `draining` while the server finishes the requests it has read (docs/RELAY.md "Health").
///
/// Run it after the relay's application in the same `ServiceGroup`: a group shuts services down in reverse order, so
/// this one hears of the shutdown first.
public struct DrainingNotice: Service {
    let service: RelayService

    public init(service: RelayService) {
        self.service = service
    }

    public func run() async throws {
        try? await gracefulShutdown()
        self.service.startDraining()
    }
}

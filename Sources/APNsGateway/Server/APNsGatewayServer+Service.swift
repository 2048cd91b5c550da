public import ServiceLifecycle

extension APNsGatewayServer: Service {
    /// Runs the gateway as a service: starts it (unless already started), waits for graceful shutdown or
    /// cancellation, then shuts it down.
    ///
    /// - Throws: What ``start()`` throws.
    public func run() async throws {
        if self.port == nil {
            _ = try await self.start()
        }
        try? await gracefulShutdown()
        try await self.shutdown()
    }
}

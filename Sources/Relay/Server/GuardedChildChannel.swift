import ConnectionGuard
import HummingbirdCore
import Logging
import NIOCore
import NIOSSL

/// A Hummingbird child channel (here the TLS + ALPN HTTP/2-or-HTTP/1.1 channel) with the relay's connection limits:
/// every accepted connection is tracked, and a ``ConnectionDeadlineHandler`` right after the TLS handler closes it when
/// a deadline passes (docs/RELAY.md "Connections").
struct GuardedChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let tracker: ConnectionTracker

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        self.tracker.track(channel)
        // The base adds its TLS handler synchronously (setup runs on the channel's event loop): the deadline handler
        // goes right after it, before protocol negotiation, so it sees the handshake finish.
        let value = self.base.setup(channel: channel, logger: logger)
        do {
            let sync = channel.pipeline.syncOperations
            let tls = try sync.handler(type: NIOSSLServerHandler.self)
            // The server's own GOAWAY closes an idle HTTP/2 connection gracefully at the idle timeout; the deadline
            // handler closes it 5 s later if the client never answered.
            let deadlines = ConnectionDeadlineHandler(
                tracker: self.tracker,
                http2IdleGrace: .seconds(5),
                awaitsServer: true
            )
            try sync.addHandler(deadlines, position: .after(tls))
            try sync.addHandler(AsyncStreamGuard(), position: .after(deadlines))
        } catch {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(error)
        }
        return value
    }

    func handle(value: Value, logger: Logger) async {
        // From now on the server reads this connection; a connection accepted as the server stopped, which its loop
        // never takes, is closed by the deadline handler when the shutdown reaches it.
        let channel = value.channel
        channel.eventLoop.execute {
            try? channel.pipeline.syncOperations.handler(type: ConnectionDeadlineHandler.self).serverTookConnection()
        }
        await self.base.handle(value: value, logger: logger)
        // The loop over the connection's requests has ended: nothing may arrive for it any more.
        try? await value.channel.close()
    }
}

/// Hummingbird's accept gate, decided by the relay's ``ConnectionTracker``: at the cap, the connection that waited
/// longest without a request in progress is closed to make room.
struct TrackedConnections: AvailableConnectionsDelegate {
    let tracker: ConnectionTracker

    // The tracker counts connections itself (from each child channel's setup to its close).
    mutating func connectionOpened() {}
    mutating func connectionClosed() {}
    func isAcceptingNewConnections() -> Bool { self.tracker.admitsAnother() }
}

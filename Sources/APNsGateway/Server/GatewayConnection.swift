import E2EECore
import Foundation
import Locking
import NIOCore
import NIOHTTP2

/// The gateway's view of one HTTP/2 connection: its provider token, its stream count, and the connection-level
/// frames it sends (SETTINGS to raise or lower the stream limit, GOAWAY).
///
/// Streams of one connection finish concurrently (their processing runs in tasks), so the counters live in a
/// `PThreadMutex`; frames are written to the connection channel, which is thread-safe.
final class GatewayConnection: Sendable {
    enum Admission: Equatable {
        case admit
        case refuse
    }

    private struct State {
        var admitted = 0
        var inFlight = 0
        var answered = 0
        var raised = false
        var dropped = false
        var goAwaySent = false
        var highestAdmittedStreamID = HTTP2StreamID(0)
    }

    /// The connection's channel (below the HTTP/2 handler's stream multiplexer).
    let channel: any Channel
    /// The connection's provider-token state.
    let tokens = ConnectionTokenState()
    private let maxConcurrentStreams: Int
    private let faults: FaultInjection
    private let state = PThreadMutex(State())

    init(channel: any Channel, maxConcurrentStreams: Int, faults: FaultInjection) {
        self.channel = channel
        self.maxConcurrentStreams = maxConcurrentStreams
        self.faults = faults
    }

    /// The `SETTINGS_MAX_CONCURRENT_STREAMS` a connection starts with: one, until a valid token succeeds.
    static let initialMaxConcurrentStreams = 1

    /// Decides whether a complete request is processed: after a GOAWAY fault's stream count, it is refused.
    func admit(streamID: HTTP2StreamID) -> Admission {
        self.state.withLock { state in
            if let goAway = self.faults.goAway, state.admitted >= goAway.afterStreams { return .refuse }
            state.admitted += 1
            state.inFlight += 1
            state.highestAdmittedStreamID = max(state.highestAdmittedStreamID, streamID)
            return .admit
        }
    }

    /// Called when a request with a valid token is answered 200: the first time, the stream limit is raised.
    func requestSucceeded() {
        let limit: Int? = self.state.withLock { state in
            guard !state.raised else { return nil }
            state.raised = true
            if state.dropped, let drop = self.faults.streamLimitDrop {
                return min(drop.maxConcurrentStreams, self.maxConcurrentStreams)
            }
            return self.maxConcurrentStreams
        }
        if let limit { self.sendMaxConcurrentStreams(limit) }
    }

    /// Called once an admitted stream is answered (or deliberately left silent).
    func streamFinished() {
        enum Action {
            case dropLimit(Int)
            case goAway(HTTP2StreamID, String)
        }
        let actions: [Action] = self.state.withLock { state in
            state.inFlight -= 1
            state.answered += 1
            var actions: [Action] = []
            if let drop = self.faults.streamLimitDrop, !state.dropped, state.answered >= drop.afterStreams {
                state.dropped = true
                actions.append(.dropLimit(drop.maxConcurrentStreams))
            }
            if let goAway = self.faults.goAway, !state.goAwaySent, state.admitted >= goAway.afterStreams,
                state.inFlight == 0
            {
                state.goAwaySent = true
                actions.append(.goAway(state.highestAdmittedStreamID, goAway.reason))
            }
            return actions
        }
        for action in actions {
            switch action {
            case .dropLimit(let limit):
                self.sendMaxConcurrentStreams(limit)
            case .goAway(let lastStreamID, let reason):
                self.sendGoAway(lastStreamID: lastStreamID, reason: reason)
            }
        }
    }

    private func sendMaxConcurrentStreams(_ limit: Int) {
        let settings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: limit)]
        let frame = HTTP2Frame(streamID: .rootStream, payload: .settings(.settings(settings)))
        self.channel.writeAndFlush(frame, promise: nil)
    }

    private func sendGoAway(lastStreamID: HTTP2StreamID, reason: String) {
        let json = JSONLine.bytes(["reason": reason])
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: ByteBuffer(bytes: json))
        )
        let channel = self.channel
        channel.writeAndFlush(frame).whenComplete { _ in channel.close(promise: nil) }
    }
}

import Locking
import Logging
import NotificationFilter

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A settable clock for ring timeouts.
final class CallTestClock: Sendable {
    private let current: PThreadMutex<Date>
    init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) { current = PThreadMutex(start) }
    var now: Date { current.withLock { $0 } }
    func advance(seconds: Double) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var nowMs: Int64 { Int64(now.timeIntervalSince1970 * 1000) }
}

struct CallHarness {
    let clock = CallTestClock()
    let sink = InMemoryCallEventSink()
    let provider: CallProvider
    let reporter: CallReporter

    init(_ configuration: CallProviderConfiguration = CallProviderConfiguration()) {
        let clock = self.clock
        provider = CallProvider(
            configuration: configuration,
            sinks: [sink],
            logger: Logger(label: "test.calls"),
            now: { clock.now }
        )
        reporter = CallReporter(provider: provider, logger: Logger(label: "test.reporter"))
    }
}

func callUpdate(
    _ handle: String = "bob",
    type: CallHandleType = .generic,
    name: String? = "Bob",
    video: Bool = false,
    account: String = "alice"
) -> CallUpdate {
    CallUpdate(
        remoteHandle: CallHandle(type: type, value: handle),
        localizedCallerName: name,
        hasVideo: video,
        account: account
    )
}

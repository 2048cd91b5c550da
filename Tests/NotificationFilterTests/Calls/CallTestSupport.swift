import Locking
import Logging
import NotificationFilter
import TestSupport

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

struct CallHarness {
    let clock = TestClock(Date(timeIntervalSince1970: 1_700_000_000))
    let sink = InMemoryCallEventSink()
    let provider: CallProvider
    let reporter: CallReporter

    init(_ configuration: CallProviderConfiguration = CallProviderConfiguration()) {
        let clock = self.clock
        provider = CallProvider(
            configuration: configuration,
            sinks: [sink],
            logger: Logger(label: "test.calls"),
            clock: clock.wallClock
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

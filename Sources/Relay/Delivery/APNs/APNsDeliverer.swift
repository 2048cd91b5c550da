public import E2EECore
import Foundation
import PushTransport
public import Sender

/// Delivers pushes to APNs: frames each envelope into the uniform alert body (`APNsAlertTransport`, docs/PROTOCOL.md
/// §4) and sends it through the Sender's ``APNsClient`` of the address's environment, then classifies APNs' answer
/// by its typed status, reason and local outcome.
public struct APNsDeliverer: PushDeliverer {
    /// One client per environment name (`production`, `development`); one client may serve both.
    public let clients: [String: APNsClient]
    /// The app's topics (bundle ids): a push to an address registered for another topic is not sent, and the
    /// address fails (`topic-not-allowed`). Empty: every topic.
    public let topics: Set<String>

    public init(clients: [String: APNsClient], topics: Set<String> = []) {
        self.clients = clients
        self.topics = topics
    }

    public var service: PushService { .apns }

    public func deliver(_ pushes: [PushDelivery]) async -> [DeliveryReport] {
        var reports = [DeliveryReport?](repeating: nil, count: pushes.count)
        var groups: [String: [(index: Int, request: APNsRequest)]] = [:]
        for (index, push) in pushes.enumerated() {
            // DeliveryService hands this deliverer apns addresses only, checked at registration; an address that is
            // not one is refused here rather than sent somewhere.
            guard let apns = push.address.push.apns else {
                reports[index] = DeliveryReport(
                    outcome: .addressRefused(reason: RelayError.Code.badPushAddress.rawValue),
                    label: "local-not-apns-address",
                    signal: .notAsked
                )
                continue
            }
            guard self.topics.isEmpty || self.topics.contains(apns.topic) else {
                // Registered before the relay was configured with its topics: APNs would refuse it (TopicDisallowed).
                reports[index] = DeliveryReport(
                    outcome: .addressRefused(reason: RelayError.Code.topicNotAllowed.rawValue),
                    label: "local-topic-not-allowed",
                    signal: .notAsked
                )
                continue
            }
            let environment = push.address.environment ?? ""
            guard self.clients[environment] != nil else {
                reports[index] = DeliveryReport(
                    outcome: .rejected(reason: "no APNs client for environment \(environment)"),
                    label: "local-no-client",
                    signal: .notAsked
                )
                continue
            }
            // The relay checked the envelope against APNs' padding at submit, so this fails only for a row written
            // by something else; framing it anyway would send APNs a body the device cannot open.
            let envelope: Envelope
            do throws(E2EEError) {
                envelope = try Envelope(parsing: push.envelope, padding: APNsAlertTransport.padding)
            } catch {
                reports[index] = DeliveryReport(
                    outcome: .rejected(reason: "malformed envelope: \(error.code)"),
                    label: "local-malformed-envelope",
                    signal: .notAsked
                )
                continue
            }
            let request = APNsRequest(
                deviceToken: apns.deviceToken,
                headers: PushBuilder.uniformHeaders(
                    topic: apns.topic,
                    apnsID: UUID(uuidString: push.pushID) ?? UUID()
                ),
                body: String(decoding: APNsAlertTransport.body(for: envelope), as: UTF8.self)
            )
            groups[environment, default: []].append((index, request))
        }
        let sent = await withTaskGroup(of: [(Int, DeliveryReport)].self) { group in
            for (environment, items) in groups {
                guard let client = self.clients[environment] else { continue }
                group.addTask {
                    // The relay's database is the truth about a token: one registered again after a 410 is live
                    // again, though the client remembers the 410.
                    for item in items where await client.tokenRegistry.isInactive(item.request.deviceToken) {
                        await client.tokenRegistry.reactivate(item.request.deviceToken)
                    }
                    let results = await client.send(items.map(\.request))
                    return zip(items, results).map { item, result in (item.index, Self.report(for: result)) }
                }
            }
            var all: [(Int, DeliveryReport)] = []
            for await part in group { all += part }
            return all
        }
        for (index, report) in sent { reports[index] = report }
        // Every push has its report by now (each group's client was found above); the fallback keeps one report per
        // push should that ever change.
        return reports.map {
            $0
                ?? DeliveryReport(
                    outcome: .retryLater(reason: nil, retryAfterMs: nil),
                    label: "local-unknown",
                    signal: .notAsked
                )
        }
    }

    /// APNs' reasons that refuse a push address for good: the address is marked failed (docs/RELAY.md "Queue and
    /// delivery").
    static let addressRefusals: Set<APNsReason> = [
        .badDeviceToken, .deviceTokenNotForTopic, .topicDisallowed, .badTopic,
    ]

    /// How the relay treats one APNs result.
    static func report(for result: APNsResult) -> DeliveryReport {
        if let status = result.status {
            let reason = result.reason
            switch status {
            case 200:
                return DeliveryReport(outcome: .delivered, status: 200, label: "200", signal: .answered)
            case 410:
                return DeliveryReport(
                    outcome: .unregistered(sinceMs: result.timestamp),
                    status: 410,
                    label: "410",
                    signal: .answered
                )
            case 400 where reason.map(Self.addressRefusals.contains) == true:
                return DeliveryReport(
                    outcome: .addressRefused(reason: reason?.rawValue ?? ""),
                    status: 400,
                    label: "400",
                    signal: .answered
                )
            case 403:
                // The relay's key or team (InvalidProviderToken, BadEnvironmentKeyIdInToken, ...), not the push: it
                // waits, with backoff, for a relay whose key works; readiness says why meanwhile.
                return DeliveryReport(
                    outcome: .retryLater(reason: reason?.rawValue, retryAfterMs: nil),
                    status: 403,
                    label: "403",
                    signal: .refused(
                        "403 \(reason?.rawValue ?? "Forbidden"): check --apns-key-file, --apns-key-id and --apns-team-id"
                    )
                )
            case _ where RetryPolicy.isRetryable(status: status):
                return DeliveryReport(
                    outcome: .retryLater(reason: reason?.rawValue, retryAfterMs: nil),
                    status: status,
                    label: "\(status)",
                    signal: .refused("\(status) \(reason?.rawValue ?? "")")
                )
            default:
                return DeliveryReport(
                    outcome: .rejected(reason: reason?.rawValue ?? "status \(status)"),
                    status: status,
                    label: "\(status)",
                    signal: .answered
                )
            }
        }
        let local = result.localOutcome
        let label = "local-\(local?.code ?? "unknown")"
        switch local?.kind {
        case .tokenInactive?:
            return DeliveryReport(outcome: .unregistered(sinceMs: nil), label: label, signal: .notAsked)
        case .invalidDeviceToken?:
            return DeliveryReport(outcome: .rejected(reason: "invalid device token"), label: label, signal: .notAsked)
        case .clientShutdown?, .cancelled?, nil:
            return DeliveryReport(
                outcome: .retryLater(reason: local?.code, retryAfterMs: nil),
                label: label,
                signal: .notAsked
            )
        default:
            // Timeouts, broken connections, an untrusted certificate: the push may or may not have arrived (a
            // timeout), or could not be sent; it is sent again after a backoff.
            return DeliveryReport(
                outcome: .retryLater(reason: local?.code, retryAfterMs: nil),
                label: label,
                signal: .unreachable(local?.message ?? "no answer")
            )
        }
    }
}

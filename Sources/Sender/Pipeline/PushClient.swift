public import E2EECore

/// One push ready to send, as ``SendPipeline`` carries it: a push service's request (``APNsRequest`` for APNs).
public protocol OutgoingPush: Sendable {
    /// The push service it goes to: ``PushClients`` hands it to that service's client.
    var service: PushService { get }
    /// The request line printed when not delivering (`e2ee-send` without `--deliver`), naming `device` when given.
    func jsonLine(device: String?) -> String
}

/// A push service's sending side, as ``SendPipeline`` delivers through it (docs/EXTENDING.md §2): ``APNsClient``
/// for APNs. A second service conforms a client of its own, and ``PushClients`` sends each push through the client
/// of its service; the pipeline does not change.
public protocol PushClient: Sendable {
    /// How many pushes the client keeps in flight at once. With 1 the pipeline sends each push in turn, so they
    /// leave strictly in input order.
    var maximumInFlight: Int { get }

    /// Sends one push and reports it as the result line of input line `line`. Failures are results, never thrown;
    /// a push that is not this service's request is refused (`unsupported-push-service`) without being sent.
    func send(_ push: any OutgoingPush, line: Int, messageID: MessageID?, device: String?) async -> SendResultLine

    /// Closes the client's connections once the pushes in flight are answered.
    func shutdown() async
}

/// The clients of several push services as one ``PushClient``: each push goes to the client of its service
/// (``OutgoingPush/service``), and a push of a service without a client is refused (`unsupported-push-service`)
/// without being sent. `e2ee-send --deliver` delivers through one of these, so a device of a second service needs
/// that service's client here and nothing else in the pipeline.
public struct PushClients: PushClient {
    /// The clients by the service they send to.
    public let clients: [PushService: any PushClient]

    /// - Precondition: at least one client.
    public init(_ clients: [PushService: any PushClient]) {
        precondition(!clients.isEmpty, "PushClients needs the client of at least one push service")
        self.clients = clients
    }

    /// The largest of the clients' windows: with every client at 1, pushes leave strictly in input order.
    public var maximumInFlight: Int { self.clients.values.map { $0.maximumInFlight }.max() ?? 1 }

    public func send(
        _ push: any OutgoingPush,
        line: Int,
        messageID: MessageID?,
        device: String?
    ) async -> SendResultLine {
        guard let client = self.clients[push.service] else {
            let services = self.clients.keys.map(\.rawValue).sorted().joined(separator: ", ")
            let error = SenderError(
                .unsupportedPushService,
                "the push for line \(line) goes to \(push.service.rawValue), and this sender delivers to \(services) only"
            )
            return SendResultLine(line: line, error: error, device: device, messageID: messageID)
        }
        return await client.send(push, line: line, messageID: messageID, device: device)
    }

    public func shutdown() async {
        for client in self.clients.values { await client.shutdown() }
    }
}

extension APNsRequest: OutgoingPush {
    public var service: PushService { .apns }
}

extension APNsClient: PushClient {
    public var maximumInFlight: Int { self.configuration.window }

    public func send(
        _ push: any OutgoingPush,
        line: Int,
        messageID: MessageID?,
        device: String?
    ) async -> SendResultLine {
        guard let request = push as? APNsRequest else {
            let error = SenderError(
                .unsupportedPushService,
                "the push for line \(line) is not an APNs request: the APNs client cannot send it"
            )
            return SendResultLine(line: line, error: error, device: device, messageID: messageID)
        }
        return SendResultLine(line: line, result: await self.send(request), messageID: messageID, device: device)
    }
}

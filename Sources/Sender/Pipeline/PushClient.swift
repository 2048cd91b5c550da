public import E2EECore

/// One push ready to send, as ``SendPipeline`` carries it: a push service's request (``APNsRequest`` for APNs).
public protocol OutgoingPush: Sendable {
    /// The request line printed when not delivering (`e2ee-send` without `--deliver`), naming `device` when given.
    func jsonLine(device: String?) -> String
}

/// A push service's sending side, as ``SendPipeline`` delivers through it (docs/EXTENDING.md §2): ``APNsClient``
/// for APNs. A second service conforms a client of its own; the pipeline does not change.
public protocol PushClient: Sendable {
    /// How many pushes the client keeps in flight at once. With 1 the pipeline sends each push in turn, so they
    /// leave strictly in input order.
    var maximumInFlight: Int { get }

    /// Sends one push and reports it as the result line of input line `line`. Failures are results, never thrown;
    /// a push that is not this service's request is refused (`unsupported-push-service`) without being sent.
    func send(_ push: any OutgoingPush, line: Int, messageID: MessageID?, device: String?) async -> SendResultLine
}

extension APNsRequest: OutgoingPush {}

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

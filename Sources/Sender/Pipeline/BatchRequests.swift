import E2EECore

/// Turns `e2ee-send batch` lines (``SendRequest`` JSON objects) into sealed pushes for ``SendPipeline``: one item
/// per device of the recipient (fan-out, docs/PROTOCOL.md §11.7).
///
/// Each recipient's list is read, verified and checked against the pins once per run (``ContactTrust``); a refused
/// recipient makes each line to it one failed result with the refusal's code, and the batch goes on.
public struct BatchRequests: Sendable {
    public let builder: PushBuilder
    public private(set) var trust: ContactTrust

    public init(builder: PushBuilder, trust: ContactTrust) {
        self.builder = builder
        self.trust = trust
    }

    /// Parses, seals and frames one line; a bad line or a refused recipient becomes one `.failed` item with the
    /// reason, a device that cannot be sent to one `.failed` item naming the device.
    public mutating func prepare(line: String) -> [PipelineItem] {
        do throws(SenderError) {
            let request = try SendRequest.parse(line: line)
            let list = try self.trust.list(for: request.to)
            var messageID: MessageID? = nil
            if let hex = request.messageID { messageID = try SendRequest.messageID(hex) }
            let pushes = try self.builder.fanOut(
                request.content(sender: self.builder.identity),
                to: list,
                deviceToken: request.deviceToken,
                messageID: messageID ?? .random(),
                sentAtMs: request.sentAtMs,
                topic: request.topic
            )
            return pushes.map { push in
                switch push.outcome {
                case .success(let built): .deliver(built.request, messageID: built.messageID, device: push.deviceID)
                case .failure(let error): .failed(error, device: push.deviceID)
                }
            }
        } catch {
            return [.failed(error)]
        }
    }

    /// Parses one request line for `e2ee-send deliver` (sent as it is, nothing re-sealed).
    public static func prepareRequestLine(_ line: String) -> [PipelineItem] {
        do {
            return [.deliver(try APNsRequest.parse(requestLine: line), messageID: nil)]
        } catch {
            return [.failed(error)]
        }
    }
}

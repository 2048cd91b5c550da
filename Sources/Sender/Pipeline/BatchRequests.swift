public import E2EECore

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

    /// A line parsed and its recipient's list checked, ready to be sealed (``seal(_:)``) on any core.
    public enum StagedLine: Sendable {
        case ready(
            content: MessageContent,
            list: DeviceList,
            deviceToken: String?,
            messageID: MessageID,
            sentAtMs: UInt64?,
            topic: String?
        )
        case failed(SenderError)
    }

    /// Parses, seals and frames one line; a bad line or a refused recipient becomes one `.failed` item with the
    /// reason, a device that cannot be sent to one `.failed` item naming the device.
    public mutating func prepare(line: String) -> [PipelineItem] {
        self.seal(self.stage(line: line))
    }

    /// The part of ``prepare(line:)`` that must run in input order: parsing, and reading and checking the
    /// recipient's list against the pins (cached per recipient for the run).
    public mutating func stage(line: String) -> StagedLine {
        do throws(SenderError) {
            let request = try SendRequest.parse(line: line)
            let list = try self.trust.list(for: request.to)
            var messageID: MessageID? = nil
            if let hex = request.messageID { messageID = try SendRequest.messageID(hex) }
            return .ready(
                content: try request.content(sender: self.builder.identity),
                list: list,
                deviceToken: request.deviceToken,
                messageID: messageID ?? .random(),
                sentAtMs: request.sentAtMs,
                topic: request.topic
            )
        } catch {
            return .failed(error)
        }
    }

    /// The part of ``prepare(line:)`` that may run on any core, several lines at once: sealing to each device
    /// and framing the requests.
    public func seal(_ staged: StagedLine) -> [PipelineItem] {
        switch staged {
        case .failed(let error):
            return [.failed(error)]
        case .ready(let content, let list, let deviceToken, let messageID, let sentAtMs, let topic):
            do throws(SenderError) {
                let pushes = try self.builder.fanOut(
                    content,
                    to: list,
                    deviceToken: deviceToken,
                    messageID: messageID,
                    sentAtMs: sentAtMs,
                    topic: topic
                )
                return pushes.map { push in
                    if let skipped = push.skipped {
                        return .skipped(skipped, messageID: messageID, device: push.deviceID)
                    }
                    return switch push.outcome {
                    case .success(let built):
                        .deliver(built.push, messageID: built.messageID, device: push.deviceID)
                    case .failure(let error): .failed(error, device: push.deviceID)
                    }
                }
            } catch {
                return [.failed(error)]
            }
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

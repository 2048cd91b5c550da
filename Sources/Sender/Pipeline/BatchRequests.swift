import E2EECore

/// Turns `e2ee-send batch` lines (``SendRequest`` JSON objects) into sealed pushes for ``SendPipeline``.
///
/// Cards are read once per recipient and kept for the run.
public struct BatchRequests: Sendable {
    public let builder: PushBuilder
    public let directory: ContactDirectory
    private var cards: [String: DeviceList] = [:]

    public init(builder: PushBuilder, directory: ContactDirectory) {
        self.builder = builder
        self.directory = directory
    }

    /// Parses, seals and frames one line; a bad line becomes `.failed` with the reason.
    public mutating func prepare(line: String) -> PipelineItem {
        do {
            let request = try SendRequest.parse(line: line)
            let card = try self.cards[request.to] ?? self.directory.card(for: request.to)
            self.cards[request.to] = card
            let messageID = try request.messageID.map { try SendRequest.messageID($0) }
            let built = try self.builder.build(
                request.content(sender: self.builder.identity),
                to: card,
                deviceToken: request.deviceToken,
                messageID: messageID ?? .random(),
                sentAtMs: request.sentAtMs,
                topic: request.topic
            )
            return .deliver(built.request, messageID: built.messageID)
        } catch let error as SenderError {
            return .failed(error)
        } catch {
            return .failed(SenderError(.badRequest, "\(error)"))
        }
    }

    /// Parses one request line for `e2ee-send deliver` (sent as it is, nothing re-sealed).
    public static func prepareRequestLine(_ line: String) -> PipelineItem {
        do {
            return .deliver(try APNsRequest.parse(requestLine: line), messageID: nil)
        } catch {
            return .failed(error)
        }
    }
}

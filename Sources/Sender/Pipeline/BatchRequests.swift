public import E2EECore
import Foundation

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

    /// Parses one request line for `e2ee-send deliver` (sent as it is, nothing re-sealed) with the format of the
    /// service it names (``requestLineService(_:)``), or with the first of `formats` when it names none.
    ///
    /// - Returns: the request, or one failed item: `unsupported-push-service` for a service without a format here,
    ///   else the format's error.
    public static func prepareRequestLine(_ line: String, formats: [any PushFormat]) -> [PipelineItem] {
        precondition(!formats.isEmpty, "reading request lines needs the format of at least one push service")
        let format: any PushFormat
        if let service = Self.requestLineService(line) {
            guard let named = formats.first(where: { $0.service == service }) else {
                let services = formats.map(\.service.rawValue).joined(separator: ", ")
                return [
                    .failed(
                        SenderError(
                            .unsupportedPushService,
                            "the line is a request of \(service.rawValue), and this sender delivers to \(services) only"
                        )
                    )
                ]
            }
            format = named
        } else {
            format = formats[0]
        }
        do throws(SenderError) {
            return [.deliver(try format.request(fromLine: line), messageID: nil)]
        } catch {
            return [.failed(error)]
        }
    }

    /// The service a request line names by its top-level `"service"` key (a string); nil when it names none, or
    /// when the line is not a JSON object (its format's reading then says what is wrong). A line without the text
    /// `"service"` anywhere, as every APNs line, is not decoded here.
    public static func requestLineService(_ line: String) -> PushService? {
        guard Self.mentionsServiceKey(line) else { return nil }
        guard let named = try? JSONDecoder().decode(ServiceKey.self, from: Data(line.utf8)) else { return nil }
        return named.service.map { PushService(rawValue: $0) }
    }

    private static let serviceKey = Array("\"service\"".utf8)

    /// Whether the text `"service"` appears anywhere in `line`: one pass over its bytes, so that an APNs line (which
    /// never has it) costs no second decoding.
    static func mentionsServiceKey(_ line: String) -> Bool {
        var line = line
        return line.withUTF8 { bytes in
            let key = Self.serviceKey
            guard bytes.count >= key.count else { return false }
            for start in 0...(bytes.count - key.count) where bytes[start] == key[0] {
                var matched = 1
                while matched < key.count, bytes[start + matched] == key[matched] { matched += 1 }
                if matched == key.count { return true }
            }
            return false
        }
    }

    /// The top-level `"service"` key of a request line, leniently: any other type reads as none.
    private struct ServiceKey: Decodable {
        var service: String?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.service = try? container.decodeIfPresent(String.self, forKey: .service)
        }

        enum CodingKeys: String, CodingKey {
            case service
        }
    }
}

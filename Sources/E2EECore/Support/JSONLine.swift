#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one writer of the JSON lines the tools print and store (result lines, call events, the lines `answer` and
/// `decline` print, `contact fetch`'s line): keys sorted, slashes as they are, no newline, and one behaviour when a
/// value cannot be encoded.
///
/// A value of strings, integers and booleans always encodes. One that does not (a non-finite number, a custom
/// `encode(to:)` that throws) is a bug; it becomes the line
/// `{"error":"internal-error","error_message":"cannot write a <type> as JSON (please report it)"}`, so the stream
/// still gets one line for it and goes on, and a reader sees what happened (never a crash, never an empty `{}`).
public enum JSONLine: Sendable {
    /// `value` as one JSON line.
    public static func encode(_ value: some Encodable) -> String {
        String(decoding: self.bytes(value), as: UTF8.self)
    }

    /// `value` as the UTF-8 bytes of one JSON line.
    public static func bytes(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(value))
        } catch {
            let type = String(describing: type(of: value))
            return Array(
                #"{"error":"internal-error","error_message":"cannot write a \#(type) as JSON (please report it)"}"#.utf8
            )
        }
    }
}

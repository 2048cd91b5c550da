import E2EECore
import Foundation
import Testing

/// Loads the committed vector files under `Fixtures/`, found relative to this source file (`#filePath`).
///
/// A missing or unreadable fixture throws, so the test that asked for it fails: nothing is ever re-recorded or
/// silently skipped.
enum VectorFiles {
    /// The package root: this file is `<root>/Tests/E2EECoreTests/Support/VectorFiles.swift`.
    static func packageRoot(filePath: String = #filePath) -> URL {
        URL(fileURLWithPath: filePath)
            .deletingLastPathComponent()  // Support
            .deletingLastPathComponent()  // E2EECoreTests
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()  // package root
    }

    /// The URL of `Fixtures/<relativePath>`.
    static func url(_ relativePath: String) -> URL {
        packageRoot().appendingPathComponent("Fixtures").appendingPathComponent(relativePath)
    }

    /// The bytes of `Fixtures/<relativePath>`.
    ///
    /// - Throws: ``VectorFileError`` when the file is missing or unreadable.
    static func data(_ relativePath: String) throws -> Data {
        let url = self.url(relativePath)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw VectorFileError(
                "fixture \(url.path) is missing or unreadable: restore it from git (see Fixtures/SOURCES.md)"
            )
        }
        return data
    }

    /// Decodes `Fixtures/<relativePath>` as JSON.
    static func load<T: Decodable>(_ type: T.Type, _ relativePath: String) throws -> T {
        let data = try self.data(relativePath)
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw VectorFileError("fixture \(relativePath) does not decode as \(T.self): \(error)")
        }
    }
}

/// A fixture could not be found or parsed.
struct VectorFileError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A hex string from a vector file, decoded once at load time (strict: an odd length or a non-hex digit fails the
/// decoding of the whole file).
struct HexBytes: Decodable, Hashable, Sendable, CustomStringConvertible {
    let bytes: [UInt8]

    init(from decoder: any Decoder) throws {
        let string = try decoder.singleValueContainer().decode(String.self)
        guard let bytes = Hex.decode(string) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not hex: \"\(string.prefix(40))\"")
            )
        }
        self.bytes = bytes
    }

    var count: Int { self.bytes.count }
    var description: String { Hex.encode(self.bytes) }
}

/// The top level of a Wycheproof v1 test vector file (`testvectors_v1/*.json`).
struct WycheproofFile<Group: Decodable & Sendable>: Decodable, Sendable {
    let algorithm: String
    let schema: String
    let numberOfTests: Int
    let testGroups: [Group]
}

/// The expected outcome of a Wycheproof case.
enum WycheproofResult: String, Decodable, Sendable {
    case valid
    case invalid
    case acceptable
}

/// The fields every Wycheproof case carries, used to name a case in a failure message.
protocol WycheproofCase: Sendable {
    var tcId: Int { get }
    var comment: String { get }
    var flags: [String] { get }
    var result: WycheproofResult { get }
}

extension WycheproofCase {
    /// `tcId 12 [valid] (Ktv) RFC 7539`: the label every expectation on this case carries.
    var label: Comment {
        "tcId \(self.tcId) [\(self.result.rawValue)] (\(self.flags.joined(separator: ","))) \(self.comment)"
    }
}

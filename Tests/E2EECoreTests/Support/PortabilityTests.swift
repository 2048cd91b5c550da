import Foundation
import Testing

/// The code a notification service extension links (E2EECore, PushTransport, NotificationFilter) builds on Darwin
/// as on Linux (Package.swift declares macOS 15): no call qualified by a Linux C module (`Glibc.read`), and in
/// E2EECore one platform file names the C library at all.
@Suite("Portability of the device-side code")
struct PortabilityTests {
    static let sources = VectorFiles.packageRoot().appendingPathComponent("Sources")

    static func swiftFiles(_ target: String) throws -> [(path: String, text: String)] {
        let folder = sources.appendingPathComponent(target)
        let enumerator = try #require(FileManager.default.enumerator(atPath: folder.path))
        return try enumerator.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.map { relative in
            let text = try String(contentsOf: folder.appendingPathComponent(relative), encoding: .utf8)
            return ("\(target)/\(relative)", text)
        }
    }

    @Test("no Glibc- or Musl-qualified call in E2EECore, PushTransport or NotificationFilter")
    func noLinuxQualifiedCalls() throws {
        for target in ["E2EECore", "PushTransport", "NotificationFilter"] {
            let files = try Self.swiftFiles(target)
            #expect(!files.isEmpty, "no sources found for \(target)")
            for file in files {
                for (number, line) in file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
                where line.contains("Glibc.") || line.contains("Musl.") {
                    Issue.record("\(file.path):\(number + 1) calls the C library through a Linux module: \(line)")
                }
            }
        }
    }

    @Test("in E2EECore only Support/Platform.swift imports the C library (besides libsodium's folder)")
    func onePlatformFile() throws {
        let importers = try Self.swiftFiles("E2EECore").filter { file in
            ["import Glibc", "import Musl", "import Darwin"].contains { file.text.contains($0) }
        }
        #expect(importers.map(\.path) == ["E2EECore/Support/Platform.swift"])
    }
}

import Logging

@testable import NotificationFilter

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh temporary directory per test, removed when the value goes away.
final class ScratchDirectory: Sendable {
    let path: String

    init() {
        var template = Array("/tmp/nf-state-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(created != nil, "mkdtemp failed")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit {
        if let dir = opendir(path) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { unlink(path + "/" + name) }
            }
            closedir(dir)
        }
        rmdir(path)
    }
}

/// Writes `bytes` to a new file at `path`.
func writeScratchFile(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(fd >= 0)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

func openStore(_ path: String) throws -> FilterStateStore {
    try FilterStateStore(path: path, logger: Logger(label: "test.state"))
}

/// The permission bits of the file at `path` (nil if there is none).
func fileMode(_ path: String) -> mode_t? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o777
}

/// Whether a file exists at `path`.
func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

func messageID(_ n: UInt8) -> [UInt8] { [UInt8](repeating: 0xA0, count: 15) + [n] }

struct TestFailure: Error, Equatable {}

import Foundation
import Testing

@testable import APNsGateway

/// The gateway's file calls: whole buffers through swift-system, and a failure's reason left for `lastError()`.
@Suite("Gateway file calls")
struct FileDescriptorIOTests {
    @Test("writeAll writes every byte, and read reads them back at any offset, fewer at the end of the file")
    func writeAndRead() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("data")
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0o600)
        try #require(fd >= 0)
        defer { FileDescriptorIO.close(fd) }
        let bytes = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(FileDescriptorIO.writeAll(fd, bytes))
        #expect(FileDescriptorIO.size(fd) == 70_000)
        #expect(FileDescriptorIO.read(fd, offset: 0, count: 70_000) == bytes)
        #expect(FileDescriptorIO.read(fd, offset: 69_990, count: 100) == Array(bytes[69_990...]))
        #expect(FileDescriptorIO.read(fd, offset: 80_000, count: 10) == [])
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(bytes))
    }

    @Test("a failed write or read answers false or nil, with the system's reason in lastError()")
    func failures() throws {
        let full = open("/dev/full", O_WRONLY)
        try #require(full >= 0)
        defer { FileDescriptorIO.close(full) }
        #expect(!FileDescriptorIO.writeAll(full, [1, 2, 3]))
        #expect(FileDescriptorIO.lastError() == String(cString: strerror(ENOSPC)))

        let directory = try TemporaryDirectory()
        let readOnly = open(directory.path, O_RDONLY | O_DIRECTORY)
        try #require(readOnly >= 0)
        defer { FileDescriptorIO.close(readOnly) }
        #expect(FileDescriptorIO.read(readOnly, offset: 0, count: 8) == nil)
        #expect(FileDescriptorIO.lastError() == String(cString: strerror(EISDIR)))
        #expect(!FileDescriptorIO.writeAll(readOnly, [1]))
        #expect(FileDescriptorIO.lastError() == String(cString: strerror(EBADF)))
    }
}

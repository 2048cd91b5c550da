#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain TCP connection to a loopback port, for tests of what a server does with clients that send nothing, or
/// bytes too slowly: it connects, sends raw bytes, and tells whether the server closed it.
public final class RawConnection: @unchecked Sendable {
    // @unchecked Sendable: `fd` is set once in `init`; `close()` may race another thread's use of it, which only makes
    // that use fail (the tests treat a failed send as a closed connection).

    private var fd: Int32

    /// Connects to `127.0.0.1:port` (blocking until the kernel has completed the TCP handshake).
    ///
    /// - Throws: ``ProcessTestError`` when no socket can be made or the connection is refused.
    public init(port: Int) throws {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw ProcessTestError("socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = errno
            Glibc.close(fd)
            throw ProcessTestError("connect to 127.0.0.1:\(port) failed: errno \(error)")
        }
        self.fd = fd
    }

    deinit { self.close() }

    /// Sends `bytes`; false when the connection is gone.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        guard self.fd >= 0 else { return false }
        let sent = bytes.withUnsafeBytes { Glibc.send(self.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return sent == bytes.count
    }

    /// Whether the server has closed the connection (a read returns end of file or an error), waiting up to
    /// `milliseconds` for it to happen. Bytes the server sent meanwhile are read and dropped.
    public func closedByServer(within milliseconds: Int32) -> Bool {
        guard self.fd >= 0 else { return true }
        var waited: Int32 = 0
        while waited <= milliseconds {
            var poll = pollfd(fd: self.fd, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&poll, 1, 50)
            waited += 50
            guard ready > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let read = recv(self.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if read == 0 || (read < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { return true }
        }
        return false
    }

    /// Closes the connection (once).
    public func close() {
        if self.fd >= 0 {
            Glibc.close(self.fd)
            self.fd = -1
        }
    }
}

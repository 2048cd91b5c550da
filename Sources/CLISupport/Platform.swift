// The one file of CLISupport that names the C library: what swift-system does not wrap. The calls have the same
// names and meaning on Linux (Glibc, Musl) and Darwin.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

enum Platform {
    /// Ignores SIGPIPE for the whole process, so a write to a pipe whose reader went away fails with EPIPE (an error
    /// the tool reports with its exit code) instead of killing the process.
    static func ignoreBrokenPipe() {
        _ = signal(SIGPIPE, SIG_IGN)
    }
}

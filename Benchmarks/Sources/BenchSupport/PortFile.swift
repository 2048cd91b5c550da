public import Foundation

/// What the process benchmarks share.
public enum PortFile: Sendable {
    /// Waits (up to a minute) for a server process to write its bound port to `path`.
    ///
    /// - Returns: The port, or nil when the process exited or wrote none in time (the caller says what failed).
    public static func wait(_ path: String, for process: Process) async throws -> Int? {
        for _ in 0..<1200 {
            if let text = try? String(contentsOfFile: path, encoding: .utf8),
                let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                return port
            }
            guard process.isRunning else { return nil }
            try await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }
}

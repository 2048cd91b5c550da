import Foundation

/// Writes the bound port for scripts that start the gateway on port 0.
public enum PortFile: Sendable {
    /// Writes `port` and a newline to `path` atomically (a temporary file in the same directory, then a rename),
    /// so a reader never sees a partial number.
    ///
    /// - Parameters:
    ///   - port: The bound port.
    ///   - path: The port file.
    /// - Throws: ``GatewayError/Code/invalidConfiguration`` when the file cannot be written.
    public static func write(_ port: Int, to path: String) throws(GatewayError) {
        do {
            try Data("\(port)\n".utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw .invalidConfiguration("cannot write the port file \(path): \(error); check the directory exists")
        }
    }
}

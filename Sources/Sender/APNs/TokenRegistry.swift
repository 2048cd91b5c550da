import E2EECore
import Foundation
public import Logging

/// The device tokens APNs has declared gone (410), so later pushes to them are refused locally.
///
/// APNs asks providers to stop sending to a token once it answers 410 `Unregistered` or `ExpiredToken`; continuing
/// to send can get a provider throttled. The client consults this registry before every push: an inactive token
/// yields a result with the local outcome `tokenInactive` and no request is made. A token comes back only through
/// ``reactivate(_:)`` (the app registered it again).
///
/// The registry lives in memory, optionally persisted to a JSON file written atomically with mode `0600` (device
/// tokens are personal data). A persistence failure is logged and remembered in ``lastPersistenceError``; the
/// in-memory state stays authoritative for this process.
public actor TokenRegistry {
    /// One inactive token and when APNs said it stopped being valid.
    public struct Entry: Sendable, Hashable, Codable {
        /// The device token, lowercase hex.
        public var deviceToken: String
        /// The 410 `timestamp` in milliseconds since 1970, if APNs sent one.
        public var timestamp: Int64?

        enum CodingKeys: String, CodingKey {
            case deviceToken = "device_token"
            case timestamp = "timestamp_ms"
        }
    }

    private struct FileFormat: Codable {
        var version: Int
        var inactive: [Entry]
    }

    private var entries: [String: Entry] = [:]
    private let path: String?
    private let logger: Logger?
    /// The last error writing the registry file, `nil` after a successful write.
    public private(set) var lastPersistenceError: SenderError?

    /// Creates an empty registry that lives only in memory.
    public init() {
        self.path = nil
        self.logger = nil
    }

    /// Creates a registry persisted to a JSON file, loading the file if it exists.
    ///
    /// - Parameters:
    ///   - path: The JSON file; created (mode `0600`) on the first change. Its folder must exist.
    ///   - logger: Receives persistence failures and 410 timestamps, never a token or any part of one.
    /// - Throws: ``SenderError/Code/registryFileUnreadable`` when the file exists but cannot be read, is readable by
    ///   others, or is not a registry.
    public init(persistingTo path: String, logger: Logger) throws(SenderError) {
        self.path = path
        self.logger = logger
        guard FileManager.default.fileExists(atPath: path) else { return }
        let bytes: [UInt8]
        do throws(E2EEError) {
            bytes = try SecretFile.read(path: path).withUnsafeBytes { Array($0) }
        } catch {
            throw SenderError(
                .registryFileUnreadable,
                "cannot read the token registry: \(error.message); it must be a regular file with mode 600"
            )
        }
        do {
            let file = try JSONDecoder().decode(FileFormat.self, from: Data(bytes))
            for entry in file.inactive {
                self.entries[entry.deviceToken.lowercased()] = entry
            }
        } catch {
            throw SenderError(
                .registryFileUnreadable,
                "the token registry \(path) is not valid registry JSON; move it aside to start empty"
            )
        }
    }

    /// Records that APNs answered 410 for `deviceToken`; later sends to it are refused locally.
    ///
    /// A later timestamp replaces an earlier one. Persists the change when the registry has a file.
    ///
    /// - Parameters:
    ///   - deviceToken: The hex device token.
    ///   - timestamp: The 410 `timestamp` (ms), if any.
    public func markInactive(_ deviceToken: String, timestamp: Int64?) {
        let key = deviceToken.lowercased()
        if let existing = self.entries[key], let old = existing.timestamp, old >= (timestamp ?? .min) {
            return
        }
        self.entries[key] = Entry(deviceToken: key, timestamp: timestamp)
        self.logger?.notice(
            "device token marked inactive",
            metadata: ["apns.timestamp": "\(timestamp.map { "\($0)" } ?? "-")"]
        )
        self.persist()
    }

    /// The entry for an inactive token, or `nil` if the token may be sent to.
    ///
    /// - Parameter deviceToken: The hex device token (any case).
    /// - Returns: The entry, or `nil`.
    public func entry(for deviceToken: String) -> Entry? {
        self.entries[deviceToken.lowercased()]
    }

    /// Whether sends to `deviceToken` are refused.
    ///
    /// - Parameter deviceToken: The hex device token (any case).
    /// - Returns: `true` when APNs has answered 410 for it and it was not reactivated.
    public func isInactive(_ deviceToken: String) -> Bool {
        self.entries[deviceToken.lowercased()] != nil
    }

    /// Allows sending to `deviceToken` again (the app registered it anew).
    ///
    /// - Parameter deviceToken: The hex device token (any case).
    public func reactivate(_ deviceToken: String) {
        guard self.entries.removeValue(forKey: deviceToken.lowercased()) != nil else { return }
        self.persist()
    }

    /// Every inactive token, sorted by token.
    public var inactiveEntries: [Entry] {
        self.entries.values.sorted { $0.deviceToken < $1.deviceToken }
    }

    private func persist() {
        guard let path = self.path else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        do {
            let data = try encoder.encode(FileFormat(version: 1, inactive: self.inactiveEntries))
            try SecretFile.write(path: path, bytes: SecureBytes(copying: Array(data)))
            self.lastPersistenceError = nil
        } catch {
            let failure = SenderError(
                .registryFileUnwritable,
                "cannot write the token registry \(path): \(error); check the folder exists and is writable"
            )
            self.lastPersistenceError = failure
            self.logger?.error("token registry not saved", metadata: ["error": "\(failure.message)"])
        }
    }
}

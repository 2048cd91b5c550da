// C-API BOUNDARY: this file calls libsodium directly. See README.md in this folder.
import CSodium

/// A buffer of secret bytes that is wiped with `sodium_memzero` when the last reference goes away.
///
/// The bytes are only reachable inside ``withUnsafeBytes(_:)``; equality is constant-time (`sodium_memcmp`);
/// `description` and `debugDescription` print `<redacted>`, so a secret never reaches a log by accident.
public final class SecureBytes: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    // Safety of `Sendable`: `storage` is allocated in init, written only there (or through `initializingWith`
    // before the value is published), and freed in deinit; every other access is read-only.
    private nonisolated(unsafe) let storage: UnsafeMutableRawBufferPointer

    /// The number of bytes.
    public var count: Int { self.storage.count }

    /// Creates a zero-filled buffer of `count` bytes and lets `body` fill it.
    init<E: Error>(count: Int, initializingWith body: (UnsafeMutableRawBufferPointer) throws(E) -> Void) throws(E) {
        Sodium.ensureInitialized()
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        do {
            try body(UnsafeMutableRawBufferPointer(rebasing: storage[0..<count]))
        } catch {
            sodium_memzero(storage.baseAddress, storage.count)
            storage.deallocate()
            throw error
        }
        self.storage = storage
        self.countStorage = count
    }

    private let countStorage: Int

    /// Copies `bytes` into a new secure buffer. The caller remains responsible for wiping its own copy.
    public convenience init(copying bytes: some Collection<UInt8>) {
        let array = Array(bytes)
        self.init(count: array.count) { buffer in
            buffer.copyBytes(from: array)
        }
    }

    /// Creates `count` random bytes (`randombytes_buf`).
    public static func random(count: Int) -> SecureBytes {
        SecureBytes(count: count) { buffer in
            if let base = buffer.baseAddress { randombytes_buf(base, buffer.count) }
        }
    }

    deinit {
        sodium_memzero(self.storage.baseAddress, self.storage.count)
        self.storage.deallocate()
    }

    /// Calls `body` with the secret bytes. Do not let the pointer escape.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(rebasing: self.storage[0..<self.countStorage]))
    }

    /// Constant-time comparison (`sodium_memcmp`): the time taken does not depend on where the bytes differ.
    public func constantTimeEquals(_ other: SecureBytes) -> Bool {
        guard self.countStorage == other.countStorage else { return false }
        if self.countStorage == 0 { return true }
        return sodium_memcmp(self.storage.baseAddress!, other.storage.baseAddress!, self.countStorage) == 0
    }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "SecureBytes(<redacted>, \(self.countStorage) bytes)" }
}

/// Constant-time comparison of two byte sequences of public or secret data (`sodium_memcmp`).
///
/// - Returns: `true` when both have the same length and the same bytes. Length is not hidden.
public func constantTimeEquals(_ lhs: some Collection<UInt8>, _ rhs: some Collection<UInt8>) -> Bool {
    Sodium.ensureInitialized()
    let a = Array(lhs)
    let b = Array(rhs)
    guard a.count == b.count else { return false }
    if a.isEmpty { return true }
    return a.withUnsafeBytes { pa in
        b.withUnsafeBytes { pb in sodium_memcmp(pa.baseAddress!, pb.baseAddress!, a.count) == 0 }
    }
}

/// Wipes a byte array in place with `sodium_memzero` (for temporary copies of secrets).
public func secureWipe(_ bytes: inout [UInt8]) {
    Sodium.ensureInitialized()
    bytes.withUnsafeMutableBytes { buffer in
        if let base = buffer.baseAddress { sodium_memzero(base, buffer.count) }
    }
}

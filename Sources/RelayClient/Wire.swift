import Foundation

/// Byte strings for the relay's signed requests (docs/RELAY.md), in PROTOCOL.md's encoding: `str8` is a one-byte
/// length then UTF-8, `u64` is big-endian.
package struct SignedBytes {
    package private(set) var bytes: [UInt8]

    package init(label: String) {
        self.bytes = Array(label.utf8) + [0x00]
    }

    package mutating func str8(_ value: String) {
        let utf8 = Array(value.utf8)
        precondition(utf8.count <= 255, "callers check lengths before signing")
        self.bytes.append(UInt8(utf8.count))
        self.bytes += utf8
    }

    package mutating func str16(_ value: String) {
        let utf8 = Array(value.utf8)
        precondition(utf8.count <= 65535, "callers check lengths before signing")
        self.bytes.append(UInt8(utf8.count >> 8))
        self.bytes.append(UInt8(utf8.count & 0xff))
        self.bytes += utf8
    }

    package mutating func u8(_ value: Int) {
        precondition((0...255).contains(value))
        self.bytes.append(UInt8(value))
    }

    package mutating func u64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) {
            self.bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    package mutating func raw(_ value: [UInt8]) { self.bytes += value }
}

/// Identifier rules shared by the API and the client.
package enum Identifiers {
    /// PROTOCOL §11.1: 1-64 bytes of UTF-8.
    package static func checkUserID(_ userID: String) throws(RelayError) {
        let count = userID.utf8.count
        guard (1...64).contains(count) else {
            throw RelayError(.badUserID, "a user id is 1 to 64 bytes of UTF-8; got \(count) bytes")
        }
    }

    /// PROTOCOL §11.1: 1-32 of a-z 0-9 - _ .
    package static func checkDeviceID(_ deviceID: String) throws(RelayError) {
        let utf8 = Array(deviceID.utf8)
        guard (1...32).contains(utf8.count),
            utf8.allSatisfy({
                ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2d || $0 == 0x5f || $0 == 0x2e
            })
        else {
            throw RelayError(.badDeviceID, "a device id is 1 to 32 characters of a-z, 0-9, '-', '_', '.'")
        }
    }

    /// Idempotency keys: 1-128 of A-Z a-z 0-9 - _ . :
    package static func checkIdempotencyKey(_ key: String) throws(RelayError) {
        let utf8 = Array(key.utf8)
        guard (1...128).contains(utf8.count),
            utf8.allSatisfy({
                ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2d
                    || $0 == 0x5f || $0 == 0x2e || $0 == 0x3a
            })
        else {
            throw RelayError(
                .badIdempotencyKey,
                "the Idempotency-Key header is 1 to 128 characters of A-Z, a-z, 0-9, '-', '_', '.', ':' (a UUID works)"
            )
        }
    }

    /// Path segments arrive percent-encoded.
    package static func decodePathSegment(_ segment: String) -> String { segment.removingPercentEncoding ?? segment }

    /// Encodes a path segment (user ids may hold any UTF-8).
    package static func encodePathSegment(_ value: String) -> String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}

/// The JSON encoding of the API's bodies: sorted keys, slashes as they are.
package enum RelayJSON {
    package static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every value encoded here is made of strings, numbers and booleans.
        return Array(try! encoder.encode(value))
    }
}

/// The wall clock and fresh ids, as default arguments of the public API.
public enum RelayClock: Sendable {
    /// Milliseconds since 1970.
    public static func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// A new idempotency key (a lowercase UUID).
    public static func newIdempotencyKey() -> String { UUID().uuidString.lowercased() }
}

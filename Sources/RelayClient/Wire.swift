import E2EECore
import Foundation
import PushTransport

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

    /// Encodes a path segment (user ids may hold any UTF-8): every byte but RFC 3986's unreserved characters becomes
    /// `%XX` (uppercase hex). Built by hand, once per request: Foundation's `addingPercentEncoding` with a fresh
    /// `CharacterSet` cost a sender 15 µs per submit.
    package static func encodePathSegment(_ value: String) -> String {
        let utf8 = value.utf8
        guard !utf8.allSatisfy(Self.isUnreserved) else { return value }
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(utf8.count * 3)
        for byte in utf8 {
            if Self.isUnreserved(byte) {
                encoded.append(byte)
            } else {
                encoded += [0x25, hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// A-Z a-z 0-9 - . _ ~
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x30 && byte <= 0x39)
            || byte == 0x2d || byte == 0x2e || byte == 0x5f || byte == 0x7e
    }
}

/// The JSON encoding of the API's bodies: sorted keys, slashes as they are.
package enum RelayJSON {
    /// `value` as E2EECore's `JSONLine` writes it: the project's one sorted-key encoder, with its one behaviour for
    /// a value that cannot be encoded (an `internal-error` object, never a crash).
    package static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        JSONLine.bytes(value)
    }

    /// A submit's body, byte for byte what ``encode(_:)`` makes of it, written directly: a sender encodes one per
    /// message, and `JSONEncoder` cost 25 µs of it.
    package static func encode(_ request: RelayAPI.SubmitRequest) -> [UInt8] {
        Self.pushList(#"{"pushes":["#, request.pushes.map { ($0.deviceID, $0.envelope) }, second: #","envelope":"#)
    }

    /// A submit's answer, byte for byte what ``encode(_:)`` makes of it, written directly: the relay writes one per
    /// submit, and `JSONEncoder` cost it about 10 µs.
    package static func encode(_ response: RelayAPI.SubmitResponse) -> [UInt8] {
        Self.pushList(
            response.duplicate ? #"{"duplicate":true,"pushes":["# : #"{"duplicate":false,"pushes":["#,
            response.pushes.map { ($0.deviceID, $0.pushID) },
            second: #","push_id":"#
        )
    }

    /// `opening`, then one `{"device_id":…,<second>…}` object per push, then `]}`: the layout both bodies share
    /// (keys sorted, `device_id` first).
    private static func pushList(
        _ opening: StaticString,
        _ pushes: [(deviceID: String, second: String)],
        second key: StaticString
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32 + pushes.reduce(0) { $0 + $1.deviceID.utf8.count + $1.second.utf8.count + 32 })
        bytes.append(contentsOf: UnsafeBufferPointer(start: opening.utf8Start, count: opening.utf8CodeUnitCount))
        for (index, push) in pushes.enumerated() {
            if index > 0 { bytes.append(0x2c) }
            bytes += Array(#"{"device_id":"#.utf8)
            Self.appendString(push.deviceID, to: &bytes)
            bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
            Self.appendString(push.second, to: &bytes)
            bytes.append(0x7d)
        }
        bytes += Array("]}".utf8)
        return bytes
    }

    /// A submit's answer read in one pass when it is laid out as the relay writes it (no spaces, keys in sorted
    /// order, strings without escapes); nil for anything else, which the caller then gives to `JSONDecoder`. A
    /// sender reads one answer per message, and `JSONDecoder` cost it about 15 µs.
    package static func decodeSubmitResponse(_ bytes: [UInt8]) -> RelayAPI.SubmitResponse? {
        var reader = LayoutReader(bytes: bytes)
        let duplicate: Bool
        guard reader.take(#"{"duplicate":"#) else { return nil }
        if reader.take("true") {
            duplicate = true
        } else if reader.take("false") {
            duplicate = false
        } else {
            return nil
        }
        guard reader.take(#","pushes":["#), let pushes = reader.pushList(second: #","push_id":"#),
            reader.take("}"), reader.atEnd
        else { return nil }
        return RelayAPI.SubmitResponse(
            pushes: pushes.map { RelayAPI.AcceptedPush(deviceID: $0.deviceID, pushID: $0.second) },
            duplicate: duplicate
        )
    }

    /// A submit's body read in one pass when it is laid out as ``encode(_:)`` writes it (no spaces, keys in sorted
    /// order, strings without escapes); nil for anything else, which the caller then gives to `JSONDecoder`. The
    /// relay reads one body per submit, and `JSONDecoder` cost it about 18 µs of it.
    package static func decodeSubmitRequest(_ bytes: [UInt8]) -> RelayAPI.SubmitRequest? {
        var reader = LayoutReader(bytes: bytes)
        guard reader.take(#"{"pushes":["#), let pushes = reader.pushList(second: #","envelope":"#),
            reader.take("}"), reader.atEnd
        else { return nil }
        return RelayAPI.SubmitRequest(
            pushes: pushes.map { RelayAPI.SubmitPush(deviceID: $0.deviceID, envelope: $0.second) }
        )
    }

    /// Reads bytes of one fixed layout; every method leaves the position unchanged when it does not match.
    private struct LayoutReader {
        let bytes: [UInt8]
        var index = 0

        var atEnd: Bool { index == bytes.count }

        mutating func take(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            let start = literal.utf8Start
            for offset in 0..<count where bytes[index + offset] != start[offset] { return false }
            index += count
            return true
        }

        /// The rest of a list ``pushList(_:_:second:)`` writes, after its `[`: its `{"device_id":…,<second>…}`
        /// objects and the closing `]`; nil when it is laid out in any other way.
        mutating func pushList(second key: StaticString) -> [(deviceID: String, second: String)]? {
            var pushes: [(deviceID: String, second: String)] = []
            if self.take("]") { return pushes }
            repeat {
                guard self.take(#"{"device_id":"#), let deviceID = self.plainString(), self.take(key),
                    let second = self.plainString(), self.take("}")
                else { return nil }
                pushes.append((deviceID, second))
            } while self.take(",")
            return self.take("]") ? pushes : nil
        }

        /// A JSON string without escapes or control characters, as valid UTF-8; nil for any other string.
        mutating func plainString() -> String? {
            guard index < bytes.count, bytes[index] == 0x22 else { return nil }
            var end = index + 1
            while end < bytes.count, bytes[end] != 0x22 {
                if bytes[end] == 0x5c || bytes[end] < 0x20 { return nil }
                end += 1
            }
            guard end < bytes.count, let value = String(validating: bytes[(index + 1)..<end], as: UTF8.self) else {
                return nil
            }
            index = end + 1
            return value
        }
    }

    /// A JSON string as `JSONEncoder` writes it without escaping slashes: `"` and `\` escaped, control characters as
    /// `\b \f \n \r \t` or `\u00xx`, everything else (UTF-8 included) as it is.
    private static func appendString(_ value: String, to bytes: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        bytes.append(0x22)
        for byte in value.utf8 {
            switch byte {
            case 0x22: bytes += [0x5c, 0x22]
            case 0x5c: bytes += [0x5c, 0x5c]
            case 0x08: bytes += [0x5c, 0x62]
            case 0x0c: bytes += [0x5c, 0x66]
            case 0x0a: bytes += [0x5c, 0x6e]
            case 0x0d: bytes += [0x5c, 0x72]
            case 0x09: bytes += [0x5c, 0x74]
            case 0x00..<0x20: bytes += [0x5c, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(0x22)
    }
}

/// Fresh idempotency keys, as a default argument of the public API. (The time is E2EECore's `WallClock`, as
/// everywhere else.)
public enum IdempotencyKey: Sendable {
    /// A new idempotency key (a lowercase UUID).
    public static func random() -> String { RandomID.uuidText() }
}

@_spi(Testing) import E2EECore
import E2EETestVectors
import Foundation
import Testing

/// `DeviceList.parse`'s fast path (DeviceList+Scan.swift) against `JSONDecoder`'s reading of the same bytes: it takes
/// the lists signers write, gives the very same values, and gives up (to `JSONDecoder`, which words every error) on
/// anything else. Fuzz/Sources/FuzzDeviceList makes the same comparison on fuzzed input.
@Suite("Device lists: the scan reads what JSONDecoder reads, or gives up")
struct DeviceListScanTests {
    /// Every list of the project vectors, as a signer writes it (pretty, sorted keys): both formats, X-Wing keys,
    /// retired keys, push addresses.
    static func written() -> [(String, [UInt8])] {
        let lists = ProjectVectors.deviceLists()
        return [
            ("alice-v1", lists.aliceV1), ("bob-v1", lists.bobV1), ("bob-v2", lists.bobV2), ("bob-v3", lists.bobV3),
            ("bob-v4", lists.bobV4),
        ].map { ($0.0, $0.1.jsonData()) }
    }

    /// The same result from both readers: the same list, or the same error code and message.
    static func expectSame(_ bytes: [UInt8], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let decoded = Result { () throws(E2EEError) in try DeviceList.decoded(bytes) }
        if let scanned = DeviceList.scanned(bytes) {
            #expect(
                (try? decoded.get()) == scanned,
                "\(what): the scan took bytes JSONDecoder reads otherwise",
                sourceLocation: sourceLocation
            )
        }
    }

    @Test("every written list is taken by the scan and equals JSONDecoder's; parse gives it back")
    func writtenLists() throws {
        let written = Self.written()
        #expect(written.count == 5)
        for (name, bytes) in written {
            let scanned = try #require(DeviceList.scanned(bytes), "\(name): the scan gave up on a written list")
            #expect(scanned == (try DeviceList.decoded(bytes)), "\(name)")
            #expect(try DeviceList.parse(bytes) == scanned, "\(name)")
        }
        // The fixture's texts too (what the vectors pin, as committed). Its list with a legacy push address is not
        // one a signer writes now: the scan leaves it to JSONDecoder, and parse reads it all the same.
        let fixture = try DeviceListVectorTests.entries("positive")
        #expect(fixture.count == 6)
        for vector in fixture {
            let name = try #require(vector["name"] as? String)
            let bytes = Array(try #require(vector["json"] as? String).utf8)
            if name == "bob-v2-legacy-push" {
                #expect(DeviceList.scanned(bytes) == nil)
                #expect(try DeviceList.parse(bytes) == (try DeviceList.decoded(bytes)))
                continue
            }
            let scanned = try #require(DeviceList.scanned(bytes), "\(name)")
            #expect(scanned == (try DeviceList.decoded(bytes)))
        }
        // bob-v4 holds an X-Wing key and a push address: both taken.
        let bobV4 = try #require(DeviceList.scanned(ProjectVectors.deviceLists().bobV4.jsonData()))
        #expect(bobV4.formatVersion == 3)
        #expect(bobV4.devices.contains { $0.push != nil })
        #expect(bobV4.devices.contains { $0.deviceKeys.contains { $0.publicKey.suite != .classical } })
    }

    /// Spellings JSONDecoder reads (or refuses) that the scan leaves to it: each must make the scan give up.
    static let givenUp: [(String, @Sendable (String) -> String)] = [
        ("an unknown key", { $0.replacingOccurrences(of: "\"devices\"", with: "\"x\":1,\"devices\"") }),
        (
            "a repeated key",
            { $0.replacingOccurrences(of: "\"display_name\"", with: "\"display_name\":\"A\",\"display_name\"") }
        ),
        ("a \\u escape", { $0.replacingOccurrences(of: "\"user_id\" : \"bob\"", with: "\"user_id\" : \"\\u0062ob\"") }),
        ("a fraction", { $0.replacingOccurrences(of: "\"list_version\" : 4", with: "\"list_version\" : 4.0") }),
        ("an exponent", { $0.replacingOccurrences(of: "\"list_version\" : 4", with: "\"list_version\" : 4e0") }),
        ("a leading zero", { $0.replacingOccurrences(of: "\"list_version\" : 4", with: "\"list_version\" : 04") }),
        ("a sign", { $0.replacingOccurrences(of: "\"list_version\" : 4", with: "\"list_version\" : -4") }),
        ("a byte order mark", { "\u{FEFF}" + $0 }),
        ("trailing bytes", { $0 + "x" }),
        (
            "a number as a string",
            { $0.replacingOccurrences(of: "\"list_version\" : 4", with: "\"list_version\" : \"4\"") }
        ),
        ("version 1", { $0.replacingOccurrences(of: "\"version\" : 3", with: "\"version\" : 1") }),
        ("another format", { $0.replacingOccurrences(of: "\"e2ee-device-list\"", with: "\"e2ee-device-lists\"") }),
    ]

    @Test("the scan gives up on what it does not take, and parse then answers as JSONDecoder does")
    func givesUp() throws {
        let bob = String(decoding: ProjectVectors.deviceLists().bobV4.jsonData(), as: UTF8.self)
        for (what, edit) in Self.givenUp {
            let text = edit(bob)
            #expect(text != bob, "\(what): the edit did not apply")
            let bytes = Array(text.utf8)
            #expect(DeviceList.scanned(bytes) == nil, "\(what)")
            let parsed = Result { () throws(E2EEError) in try DeviceList.parse(bytes) }
            let decoded = Result { () throws(E2EEError) in try DeviceList.decoded(bytes) }
            // parse is JSONDecoder's reading, then the signatures: its error, or its list (signature willing).
            switch (parsed, decoded) {
            case (.failure(let a), .failure(let b)): #expect(a.code == b.code && a.message == b.message, "\(what)")
            case (.success(let a), .success(let b)): #expect(a == b, "\(what)")
            case (.failure(let a), .success): #expect(a.code == .badListSignature, "\(what)")
            case (.success, .failure): Issue.record("\(what): parse took what JSONDecoder refuses")
            }
        }
        // A null push (JSONDecoder reads it as no push): the scan gives up; both readers agree.
        var object = try #require(try JSONSerialization.jsonObject(with: Data(bob.utf8)) as? [String: Any])
        var devices = try #require(object["devices"] as? [[String: Any]])
        devices[0]["push"] = NSNull()
        object["devices"] = devices
        let nullPush = Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
        #expect(DeviceList.scanned(nullPush) == nil)
        #expect(try DeviceList.decoded(nullPush).devices[0].push == nil)
        // The legacy push form (read only, as an APNs address): JSONDecoder's; the same address as the current form.
        let current = try DeviceList.decoded(Array(bob.utf8)).devices[0].push
        let apns = try #require(current?.apns)
        devices[0]["push"] = ["device_token": apns.deviceToken, "topic": apns.topic]
        object["devices"] = devices
        let legacy = Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
        #expect(DeviceList.scanned(legacy) == nil)
        #expect(try DeviceList.decoded(legacy).devices[0].push == current)
        // Whitespace anywhere between tokens is still the written form.
        let compact = try JSONSerialization.data(
            withJSONObject: try JSONSerialization.jsonObject(with: Data(bob.utf8)),
            options: [.withoutEscapingSlashes]
        )
        #expect(DeviceList.scanned(Array(compact)) == (try DeviceList.decoded(Array(bob.utf8))))
    }

    @Test("one-byte changes, deletions and duplications of written lists: the scan equals JSONDecoder or gives up")
    func mutations() async {
        var taken = 0
        var total = 0
        let written = Self.written()
        // alice-v1 at every other byte, bob-v4 (an X-Wing key, a push address) at every seventh.
        for (name, bytes, stride) in [(written[0].0, written[0].1, 2), (written[4].0, written[4].1, 7)] {
            for index in Swift.stride(from: 0, to: bytes.count, by: stride) {
                var deleted = bytes
                deleted.remove(at: index)
                var doubled = bytes
                doubled.insert(bytes[index], at: index)
                var variants = [deleted, doubled]
                for byte: UInt8 in [0x00, 0x20, 0x22, 0x31, 0x5C, 0x66, 0x7D, 0xFF] where byte != bytes[index] {
                    var changed = bytes
                    changed[index] = byte
                    variants.append(changed)
                }
                for variant in variants {
                    total += 1
                    if DeviceList.scanned(variant) != nil { taken += 1 }
                    Self.expectSame(variant, "\(name) at \(index)")
                }
                // Tens of seconds of CPU in debug builds: give the test process's other tasks their turn on the 2
                // threads of the cooperative pool, or every async test running beside this one waits for it.
                await Task.yield()
            }
        }
        // Both sides are exercised: whitespace and hex digits of the signatures keep a list readable (the scan takes
        // those), the rest gives up.
        #expect(taken > 100 && total - taken > 1_000, "\(taken) of \(total) variants taken")
    }
}

/// The fast path of ``DeviceList/parse(_:)``: a list in the form signers write it, read in one pass with
/// ``JSONScanner`` instead of `JSONDecoder`.
///
/// `e2ee-filter once` reads every contact card at each start, and `JSONDecoder`'s first use in a process (its
/// generic containers, instantiated and checked at run time) cost more than the rest of reading a card. The scan takes
/// only what `JSONDecoder` decodes to the same values: every key of §11.1 byte for byte, at most once each, no other
/// key, strings with the simple escapes, plain unsigned integers, no `null`, a push address in its current form only. It then runs the same constructors and
/// the same well-formedness check as `init(from:)`. Anything else, a failed check included, returns `nil` and
/// ``DeviceList/parse(_:)`` decodes with `JSONDecoder`, which also words the error: the scan can only be faster,
/// never different (DeviceListScanTests and the device-list fuzzer compare the two).
extension DeviceList {
    @_spi(Testing) public static func scanned(_ bytes: [UInt8]) -> DeviceList? {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = JSONScanner(bytes: buffer)
            guard let list = Self.list(&scanner), scanner.atEnd() else { return nil }
            return list
        }
    }

    private static let listNames = Self.names(CodingKeys.self)
    private static let deviceNames = Self.names(Device.CodingKeys.self)
    private static let keyNames = Self.names(DeviceKeyEntry.CodingKeys.self)
    /// The current form of a push address only; the legacy one is JSONDecoder's (PushAddress.swift).
    private static let pushNames: [[UInt8]] = [Array("service".utf8), Array("address".utf8)]

    private static func names<Key: CodingKey & CaseIterable>(_: Key.Type) -> [[UInt8]] {
        Key.allCases.map { Array($0.stringValue.utf8) }
    }

    /// Stores `value` in `target`: `false` when it is `nil` (a value the scan does not take), which ends the scan.
    private static func set<Value>(_ target: inout Value?, _ value: Value?) -> Bool {
        target = value
        return value != nil
    }

    private static func list(_ scanner: inout JSONScanner) -> DeviceList? {
        var format: String?
        var version: UInt64?
        var userID: String?
        var displayName: String?
        var userKey: [UInt8]?
        var userKeyID: [UInt8]?
        var listVersion: UInt64?
        var issuedAtMs: UInt64?
        var devices: [Device]?
        var signature: [UInt8]?
        let taken = scanner.object(names: Self.listNames) { scanner, index in
            switch CodingKeys.allCases[index] {
            case .format: return Self.set(&format, scanner.string())
            case .version: return Self.set(&version, scanner.unsignedInteger())
            case .userID: return Self.set(&userID, scanner.string())
            case .displayName: return Self.set(&displayName, scanner.string())
            case .userSigningKey: return Self.set(&userKey, scanner.hex())
            case .userSigningKeyID: return Self.set(&userKeyID, scanner.hex())
            case .listVersion: return Self.set(&listVersion, scanner.unsignedInteger())
            case .issuedAtMs: return Self.set(&issuedAtMs, scanner.unsignedInteger())
            case .devices: return Self.set(&devices, scanner.array(Self.device))
            case .signature: return Self.set(&signature, scanner.hex())
            }
        }
        guard taken, format == DeviceList.format, let version,
            version == UInt64(DeviceList.classicalFormatVersion) || version == UInt64(DeviceList.suitesFormatVersion),
            let userID, let displayName, let userKey, let userKeyID, let listVersion, let issuedAtMs, let devices,
            let signature,
            let userSigningKey = try? SigningPublicKey(rawRepresentation: userKey),
            userKeyID == userSigningKey.keyID.bytes
        else { return nil }
        let list = DeviceList(
            userID: userID,
            displayName: displayName,
            userSigningKey: userSigningKey,
            listVersion: listVersion,
            issuedAtMs: issuedAtMs,
            devices: devices,
            signature: signature,
            formatVersion: Int(version)
        )
        return (try? list.checkWellFormed()) != nil ? list : nil
    }

    private static func device(_ scanner: inout JSONScanner) -> Device? {
        var deviceID: String?
        var signingKey: [UInt8]?
        var signingKeyID: [UInt8]?
        var signedInAtMs: UInt64?
        var certificate: [UInt8]?
        var keys: [DeviceKeyEntry]?
        var push: PushAddress?
        let taken = scanner.object(names: Self.deviceNames) { scanner, index in
            switch Device.CodingKeys.allCases[index] {
            case .deviceID: return Self.set(&deviceID, scanner.string())
            case .signingKey: return Self.set(&signingKey, scanner.hex())
            case .signingKeyID: return Self.set(&signingKeyID, scanner.hex())
            case .signedInAtMs: return Self.set(&signedInAtMs, scanner.unsignedInteger())
            case .certificate: return Self.set(&certificate, scanner.hex())
            case .deviceKeys: return Self.set(&keys, scanner.array(Self.key))
            case .push: return Self.set(&push, Self.push(&scanner))
            }
        }
        guard taken, let deviceID, let signingKey, let signingKeyID, let signedInAtMs, let certificate,
            let keys,
            let key = try? SigningPublicKey(rawRepresentation: signingKey), signingKeyID == key.keyID.bytes
        else { return nil }
        return Device(
            deviceID: deviceID,
            signingKey: key,
            signedInAtMs: signedInAtMs,
            certificate: certificate,
            deviceKeys: keys,
            push: push
        )
    }

    private static func key(_ scanner: inout JSONScanner) -> DeviceKeyEntry? {
        var suiteID: UInt64?
        var keyID: [UInt8]?
        var publicKey: [UInt8]?
        var createdAtMs: UInt64?
        var retiredAtMs: UInt64?
        var expiresAtMs: UInt64?
        let taken = scanner.object(names: Self.keyNames) { scanner, index in
            switch DeviceKeyEntry.CodingKeys.allCases[index] {
            case .suite: return Self.set(&suiteID, scanner.unsignedInteger())
            case .keyID: return Self.set(&keyID, scanner.hex())
            case .publicKey: return Self.set(&publicKey, scanner.hex())
            case .createdAtMs: return Self.set(&createdAtMs, scanner.unsignedInteger())
            case .retiredAtMs: return Self.set(&retiredAtMs, scanner.unsignedInteger())
            case .expiresAtMs: return Self.set(&expiresAtMs, scanner.unsignedInteger())
            }
        }
        guard taken, let keyID, let publicKey, let createdAtMs,
            let suite = CryptoSuite.withID(UInt16(exactly: suiteID ?? UInt64(CryptoSuite.classical.id)) ?? 0),
            let devicePublicKey = try? DevicePublicKey(suite: suite, rawRepresentation: publicKey),
            keyID == devicePublicKey.keyID.bytes
        else { return nil }
        return DeviceKeyEntry(
            publicKey: devicePublicKey,
            createdAtMs: createdAtMs,
            retiredAtMs: retiredAtMs,
            expiresAtMs: expiresAtMs
        )
    }

    private static func push(_ scanner: inout JSONScanner) -> PushAddress? {
        var service: String?
        var address: String?
        let taken = scanner.object(names: Self.pushNames) { scanner, index in
            index == 0 ? Self.set(&service, scanner.string()) : Self.set(&address, scanner.string())
        }
        guard taken, let service, let address else { return nil }
        return PushAddress(service: PushService(rawValue: service), address: address)
    }
}

public import E2EECore
import Foundation

/// What `e2ee-send device …`, `rotate` and `contact …` do, as functions a test calls in-process: signing devices
/// in and out of a user's list (docs/PROTOCOL.md §11.2, §11.8), rotating device keys, describing a list.
public enum DeviceManagement: Sendable {
    /// Signs `request`'s device into `list` on the managing device `signer` (or, for a device already in the list
    /// with the same signing key, takes its new keys and push address).
    ///
    /// - Throws: `.badRequest` for a request that does not verify (bad proof, malformed), is another user's, or
    ///   names an existing device with another signing key; `.usage` when `signer` does not hold the list's user
    ///   key or the list is full.
    public static func add(
        _ request: DeviceRequest,
        to list: DeviceList,
        signer: Identity,
        nowMs: UInt64
    )
        throws(SenderError) -> DeviceList
    {
        do {
            try request.verify()
        } catch {
            throw SenderError(.badRequest, "refused the device request: \(error.message)")
        }
        guard request.userID == list.userID else {
            throw SenderError(
                .badRequest,
                "refused the device request: it is for user \"\(request.userID)\", this list is \(list.userID)'s; "
                    + "make the request with --user-id \(list.userID)"
            )
        }
        if let existing = list.device(named: request.deviceID), existing.signingKey != request.signingKey {
            throw SenderError(
                .badRequest,
                "refused the device request: \(list.userID) already has a device \"\(request.deviceID)\" with "
                    + "another signing key; remove it first (e2ee-send device remove --device-id "
                    + "\(request.deviceID)) if it is lost, or make the request with another --device-id"
            )
        }
        do {
            return try list.signingIn(request, signer: signer, nowMs: nowMs)
        } catch {
            throw SenderError(.usage, error.message)
        }
    }

    /// Signs `deviceID` out of `list` on the managing device `signer`: from the next send on, it gets nothing.
    ///
    /// - Throws: `.usage` for an unknown device, the signer's own device, or a signer without the user key.
    public static func remove(
        deviceID: String,
        from list: DeviceList,
        signer: Identity,
        nowMs: UInt64
    )
        throws(SenderError) -> DeviceList
    {
        if let device = list.device(named: deviceID), device.signingKey == signer.signingKey.publicKey {
            throw SenderError(
                .usage,
                "\"\(deviceID)\" is this device (the one signing the list): a device cannot remove itself; remove "
                    + "it from another device holding the user key"
            )
        }
        do {
            return try list.removing(deviceID: deviceID, signer: signer, nowMs: nowMs)
        } catch {
            throw SenderError(.usage, error.message)
        }
    }

    /// What a rotation produced: the rotated identity (to save), and the new list (a managing device) or a device
    /// request for the managing device to sign in (any other device).
    public struct Rotation: Sendable {
        public var identity: Identity
        public var oldKeyID: KeyID
        public var newKeyID: KeyID
        public var list: DeviceList?
        public var request: DeviceRequest?
        /// What happened, for people: the old key's deadline or its revocation, and what to do next.
        public var message: String
    }

    /// Rotates `identity`'s device key. The old key is retired now and opens pushes until now + `graceMs` (0
    /// revokes it at once). A device holding the user key re-signs `list` (version + 1); another device gets a
    /// device request carrying its new keys, which the managing device applies with `device add`.
    ///
    /// - Parameters:
    ///   - list: the user's current list (its push addresses and devices are kept); required on a managing device.
    ///   - suite: the new key's crypto suite; nil keeps the current key's (docs/PROTOCOL.md §16.4).
    /// - Throws: `.usage` when a managing device has no list or is not in it.
    public static func rotate(
        _ identity: Identity,
        list: DeviceList?,
        nowMs: UInt64,
        graceMs: UInt64,
        suite: CryptoSuite? = nil
    )
        throws(SenderError) -> Rotation
    {
        var rotated = identity
        let old = identity.currentDeviceKey.keyID
        let new = rotated.rotate(nowMs: nowMs, gracePeriodMs: graceMs, suite: suite).keyID
        let newSuite = rotated.currentDeviceKey.privateKey.suite
        let suiteNote =
            newSuite == identity.currentDeviceKey.privateKey.suite
            ? "" : " (suite \(identity.currentDeviceKey.privateKey.suite.name) -> \(newSuite.name))"
        let deadline =
            graceMs == 0
            ? "revoked: the old key opens nothing from now on"
            : "the old key opens pushes until \(Self.utc(nowMs &+ graceMs)) (\(Self.hours(graceMs)) h)"
        var rotation = Rotation(
            identity: rotated,
            oldKeyID: old,
            newKeyID: new,
            message: "rotated device key \(old) -> \(new)\(suiteNote); \(deadline)"
        )
        if identity.userSigningKey != nil {
            guard let list else {
                throw SenderError(
                    .usage,
                    "rotating on the device holding the user key re-signs the device list: pass --card with "
                        + "\(identity.userID)'s current list"
                )
            }
            do {
                rotation.list = try list.updatingKeys(of: rotated, nowMs: nowMs)
            } catch {
                throw SenderError(.usage, error.message)
            }
        } else {
            let push = list?.device(named: identity.deviceID)?.push
            do {
                rotation.request = try DeviceRequest.make(for: rotated, push: push, nowMs: nowMs)
            } catch {
                throw SenderError(.internalError, "cannot sign the device request: \(error.message)")
            }
            rotation.message +=
                "; this device does not hold the user key: sign the new keys in on the managing device with "
                + "`e2ee-send device add --request` and publish the list it writes"
        }
        return rotation
    }

    /// A list for people (`e2ee-send device list`): user, fingerprint, version and time, then one line per device.
    public static func describe(_ list: DeviceList) -> [String] {
        var lines = [
            "user \(list.userID) (\(list.displayName))",
            "fingerprint \(list.fingerprint)",
            "list version \(list.listVersion), issued \(Self.utc(list.issuedAtMs))",
            "\(list.devices.count) device\(list.devices.count == 1 ? "" : "s"):",
        ]
        for device in list.devices {
            lines.append(
                "  \(device.deviceID): signing key \(device.signingKey.keyID), signed in \(Self.utc(device.signedInAtMs))"
                    + ", current key \(device.currentKey.keyID), push \(device.push == nil ? "no" : "yes")"
            )
        }
        return lines
    }

    /// A time for people: UTC, to the second (`2026-11-23 13:26:52 UTC`).
    public static func utc(_ ms: UInt64) -> String {
        let date = Date(timeIntervalSince1970: Double(min(ms, DeviceList.maximumInteger)) / 1000)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ v: Int?) -> String { v.map { $0 < 10 ? "0\($0)" : "\($0)" } ?? "00" }
        return "\(c.year ?? 0)-\(two(c.month))-\(two(c.day)) \(two(c.hour)):\(two(c.minute)):\(two(c.second)) UTC"
    }

    static func hours(_ ms: UInt64) -> String {
        ms % 3_600_000 == 0 ? "\(ms / 3_600_000)" : String(format: "%.2f", Double(ms) / 3_600_000)
    }
}

public import E2EECore

/// The recipients' device lists a sender may seal to: each card found by a ``ContactDirectory``, verified, and
/// checked against the sender's pins (docs/PROTOCOL.md §11.5).
///
/// Trust on first use: a user not pinned yet is pinned to the list's user key, and ``notice`` is told once per user
/// with the fingerprint to compare. Afterwards a list signed by another user key (`signing-key-changed`), an older
/// version (`list-rollback`), or the pinned version with other contents (`list-version-reused`) is refused, as is a
/// list that does not verify (`device-not-signed-in`, `bad-list-signature`): every refusal is exit 76, and nothing
/// is sent to that user. A changed key is accepted only by ``accept(_:)`` (`e2ee-send contact accept`).
///
/// Each `to` is decided once per run (its list or its refusal is kept), and the pins file is written atomically
/// only when a pin changed.
public struct ContactTrust: Sendable {
    public let directory: ContactDirectory
    /// The pins file; `nil` keeps the pins in memory only (tests).
    public let pinsPath: String?
    public private(set) var pins: DevicePins
    let clock: WallClock
    let notice: @Sendable (String) -> Void
    private var decided: [String: Result<DeviceList, SenderError>] = [:]
    private var noticed: Set<String> = []

    /// - Parameters:
    ///   - directory: where cards are found.
    ///   - pinsPath: the pins file (read now; a missing file is no pins); `nil` for pins in memory only.
    ///   - pins: the pins to start from when `pinsPath` is `nil`.
    ///   - clock: the clock for `pinned_at_ms`.
    ///   - notice: receives the messages for people (first-use fingerprints); the CLI writes them to stderr.
    /// - Throws: `.unreadablePins` when the pins file exists and cannot be read or parsed.
    public init(
        directory: ContactDirectory,
        pinsPath: String?,
        pins: DevicePins = DevicePins(),
        clock: WallClock = .system,
        notice: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(SenderError) {
        self.directory = directory
        self.pinsPath = pinsPath
        self.clock = clock
        self.notice = notice
        if let pinsPath {
            self.pins = try Self.loadPins(path: pinsPath)
        } else {
            self.pins = pins
        }
    }

    /// Reads a pins file; a missing file is no pins.
    /// - Throws: `.unreadablePins`, saying how to recover.
    public static func loadPins(path: String) throws(SenderError) -> DevicePins {
        do {
            return try DevicePins.load(path: path)
        } catch {
            throw SenderError(
                .unreadablePins,
                "cannot use the pins file: \(error.message); fix it, or pass --pins with another file (a new file "
                    + "pins every contact again on first use)"
            )
        }
    }

    /// The accepted device list for `to`, pinning its user on first use.
    ///
    /// - Throws: `.unknownRecipient`, `.unreadableCard`, `.malformedList`, a list refusal
    ///   (``SenderError/Code/listRefusals``, exit 76: `.userIDMismatch` when `to`'s card holds another user's list)
    ///   with what happened and what to do, or `.cannotCreate` when the pins file cannot be written.
    public mutating func list(for to: String) throws(SenderError) -> DeviceList {
        if let decided = self.decided[to] { return try decided.get() }
        let outcome: Result<DeviceList, SenderError>
        do {
            outcome = .success(try self.check(try self.directory.card(for: to)))
        } catch {
            outcome = .failure(error)
        }
        // A pins file that cannot be written is not a decision about this user: the next line may try again.
        if case .failure(let error) = outcome, error.code == .cannotCreate { throw error }
        self.decided[to] = outcome
        return try outcome.get()
    }

    /// The accepted device list for `to` when the list comes from elsewhere than a card (a relay's fetch, verified
    /// by the caller with `DeviceList.parse`): the same pins, the same refusals and the same once-per-run decision
    /// as ``list(for:)``. `fetch` runs only the first time `to` is asked for.
    ///
    /// - Throws: what `fetch` throws (kept as this user's decision, unless it is `.relayUnavailable`), a list
    ///   refusal (exit 76; `.userIDMismatch` when the list is another user's), `.cannotCreate`.
    public mutating func list(
        for to: String,
        fetchedBy fetch: () async throws(SenderError) -> DeviceList
    ) async throws(SenderError) -> DeviceList {
        if let decided = self.decided[to] { return try decided.get() }
        let outcome: Result<DeviceList, SenderError>
        do throws(SenderError) {
            let list = try await fetch()
            do throws(E2EEError) {
                try list.checkAddressed(to: to, source: "the list served for \(to)")
            } catch {
                throw ContactDirectory.refusal(error, of: to, source: "the served list")
            }
            outcome = .success(try self.check(list))
            // The card in the contacts folder follows the pins (a later offline send reads it).
            do throws(SenderError) {
                if let path = try self.directory.keep(list) {
                    self.notice("e2ee-send: saved \(to)'s device list version \(list.listVersion) to \(path)")
                }
            } catch {
                self.notice("e2ee-send: warning: \(error.message) (the send goes on)")
            }
        } catch {
            outcome = .failure(error)
        }
        if case .failure(let error) = outcome, error.code == .cannotCreate || error.code == .relayUnavailable {
            throw error
        }
        self.decided[to] = outcome
        return try outcome.get()
    }

    /// Checks a verified list against the pins, saving them when the pin changed.
    mutating func check(_ list: DeviceList) throws(SenderError) -> DeviceList {
        let outcome: DevicePins.Outcome
        do {
            outcome = try self.pins.check(list, nowMs: self.clock.unsignedMs)
        } catch {
            throw SenderError(error, context: "refused \(list.userID)'s device list")
        }
        switch outcome {
        case .unchanged:
            break
        case .firstUse:
            try self.save()
            if self.noticed.insert(list.userID).inserted {
                self.notice(
                    "e2ee-send: pinned \(list.userID) on first use: fingerprint \(list.fingerprint); compare it with "
                        + "\(list.userID)"
                )
            }
        case .newer:
            try self.save()
        }
        return list
    }

    /// Trusts `list`'s user key from now on (a changed key the user compared), and saves the pins.
    ///
    /// Only a changed key (or a user not pinned yet) is accepted this way: a list under the pinned key goes
    /// through the usual check, so an old or a reused version is still refused.
    ///
    /// - Returns: the fingerprint pinned before, if the user was pinned.
    /// - Throws: `.listRollback` or `.listVersionReused` for a list under the pinned key; `.cannotCreate`.
    @discardableResult
    public mutating func accept(_ list: DeviceList) throws(SenderError) -> String? {
        guard let pin = self.pins.pins[list.userID] else {
            self.pins.accept(list, nowMs: self.clock.unsignedMs)
            try self.save()
            return nil
        }
        let previous = DeviceList.fingerprint(userID: list.userID, userSigningKey: pin.userSigningKey)
        if pin.userSigningKey == list.userSigningKey {
            _ = try self.check(list)
            return previous
        }
        self.pins.accept(list, nowMs: self.clock.unsignedMs)
        self.decided = [:]
        try self.save()
        return previous
    }

    private func save() throws(SenderError) {
        guard let path = self.pinsPath else { return }
        do {
            try self.pins.save(path: path)
        } catch {
            throw SenderError(.cannotCreate, "cannot save the pins: \(error.message); check the folder's rights")
        }
    }
}

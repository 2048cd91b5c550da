import Foundation
import Locking
import Logging
import Testing

@testable import Relay

/// The line that groups submits (``GroupCommit``), on its own: every request answered from its own input, groups
/// no larger than their bound, and a group's work not cancelled with its leader's request.
@Suite("Group commit line: one run for the requests that wait, each answered once")
struct GroupCommitLineTests {
    /// A run that answers each input doubled, after letting the other requests line up.
    static func doubled(_ sizes: PThreadMutex<[Int]>) -> @Sendable ([Int]) async -> [Int] {
        { inputs in
            sizes.withLock { $0.append(inputs.count) }
            try? await Task.sleep(for: .milliseconds(2))
            return inputs.map { $0 * 2 }
        }
    }

    @Test("300 concurrent requests: each gets its own answer, groups of at most 16, fewer groups than requests")
    func concurrentRequests() async {
        let line = GroupCommit<Int, Int>(maxGroup: 16)
        let sizes = PThreadMutex<[Int]>([])
        let run = Self.doubled(sizes)
        let answers = await withTaskGroup(of: (Int, Int).self) { group in
            for input in 0..<300 {
                group.addTask { (input, await line.submit(input, run: run)) }
            }
            var answers: [Int: Int] = [:]
            for await (input, answer) in group { answers[input] = answer }
            return answers
        }
        #expect(answers.count == 300)
        #expect(answers.allSatisfy { $0.value == $0.key * 2 })
        let groups = sizes.withLock { $0 }
        #expect(groups.reduce(0, +) == 300)
        #expect(groups.allSatisfy { (1...16).contains($0) })
        #expect(groups.count < 300)
        #expect(line.groups == groups.count)
        #expect(line.waiting == 0)
    }

    @Test("held requests run as one group in arrival order; the leader's cancellation does not cancel the group")
    func heldGroupAndCancelledLeader() async throws {
        let line = GroupCommit<Int, Int>(maxGroup: 16)
        let seen = PThreadMutex<[[Int]]>([])
        let run: @Sendable ([Int]) async -> [Int] = { inputs in
            seen.withLock { $0.append(inputs) }
            try? await Task.sleep(for: .milliseconds(50))
            // A cancelled run answers -1: the request whose task was cancelled would see it.
            return inputs.map { Task.isCancelled ? -1 : $0 * 2 }
        }
        let release = await line.hold()
        var tasks: [Task<Int, Never>] = []
        for input in 1...3 {
            tasks.append(Task { await line.submit(input, run: run) })
            let deadline = ContinuousClock.now + .seconds(30)
            while line.waiting < input && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        }
        #expect(line.waiting == 3)
        release()
        // The first request leads the group; cancel it while the group runs.
        try await Task.sleep(for: .milliseconds(10))
        tasks[0].cancel()
        var answers: [Int] = []
        for task in tasks { answers.append(await task.value) }
        #expect(seen.withLock { $0 } == [[1, 2, 3]])
        #expect(answers == [2, 4, 6])
        #expect(line.groups == 1)
    }
}

/// The bound of a PostgreSQL operation: the answer comes at the timeout even when the work does not end there.
@Suite("PostgreSQL operation bound: the answer does not wait for work that ignores cancellation")
struct PostgresOperationBoundTests {
    /// Work that ends after `delay` whatever happens to its task (as a statement the server has not answered).
    static func uncancellable(_ delay: Duration, value: Int) -> @Sendable () async throws -> Int {
        {
            await withCheckedContinuation { continuation in
                let nanoseconds =
                    UInt64(delay.components.seconds) * 1_000_000_000
                    + UInt64(delay.components.attoseconds / 1_000_000_000)
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
                    continuation.resume(returning: value)
                }
            }
        }
    }

    @Test("work done in time is the answer; work past the timeout is nil at the timeout; a cancelled caller at once")
    func race() async throws {
        let quick = await PostgresRelayStore.race(
            Self.uncancellable(.milliseconds(10), value: 7),
            timeout: .seconds(30)
        )
        #expect(try quick?.get() == 7)

        // The work takes 120 s and the bounds are half of that: a test run that starves the pool for seconds (seen
        // under ASan: 7.5 s) answers late but still tells an answer at the timeout from one that waited for the work.
        let start = ContinuousClock.now
        let hung = await PostgresRelayStore.race(
            Self.uncancellable(.seconds(120), value: 1),
            timeout: .milliseconds(200)
        )
        #expect(hung == nil)
        #expect(ContinuousClock.now - start < .seconds(60), "answered after \(ContinuousClock.now - start)")

        let caller = Task {
            await PostgresRelayStore.race(Self.uncancellable(.seconds(120), value: 2), timeout: .seconds(240))
        }
        try await Task.sleep(for: .milliseconds(100))
        let cancelledAt = ContinuousClock.now
        caller.cancel()
        let cancelled = await caller.value
        #expect(
            ContinuousClock.now - cancelledAt < .seconds(60),
            "answered after \(ContinuousClock.now - cancelledAt)"
        )
        #expect(throws: CancellationError.self) { try cancelled?.get() }
    }
}

/// PostgreSQL commits the submits that wait together with one statement, as the embedded store does in one
/// transaction. These tests line submits up behind a held line, so the group is known, not hoped for.
@Suite("PostgreSQL group commit: one statement for the submits that wait, each still all or nothing")
struct PostgresGroupCommitTests {
    /// Starts each stage's submits while the line is held (a stage once every submit of the stage before it waits:
    /// the order in the group is known), then lets the line go.
    static func enqueueAsOneGroup(
        _ store: PostgresRelayStore,
        _ stages: [[NewSubmit]]
    ) async throws -> [Result<EnqueueOutcome, RelayError>] {
        let release = await store.holdEnqueues()
        let tasks = try await Self.lineUp(store, stages)
        release()
        var results: [Result<EnqueueOutcome, RelayError>] = []
        for task in tasks { results.append(await task.value) }
        return results
    }

    /// Starts the stages' submits on a held line and waits until all of them wait.
    static func lineUp(
        _ store: PostgresRelayStore,
        _ stages: [[NewSubmit]]
    ) async throws -> [Task<Result<EnqueueOutcome, RelayError>, Never>] {
        try await SQLiteGroupCommitTests.lineUp(store, stages, waiting: { store.waitingEnqueues })
    }

    @Test(
        "twelve waiting submits: one statement; a reused key refused alone; a retry in the same group is a duplicate",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote)
    )
    func oneGroup() async throws {
        try await RelayStoreContractTests.withPostgres { store in
            try await SQLiteGroupCommitTests.checkOneGroup(store, groups: { store.enqueueGroups }) { stages in
                try await Self.enqueueAsOneGroup(store, stages)
            }
        }
    }

    @Test(
        "a group refused with disk_full: every submit gets storage-full, nothing of any is stored, the keys stay free",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote)
    )
    func diskFullFailsTheGroup() async throws {
        try await RelayStoreContractTests.withPostgres { store in
            try await RelayStoreContractTests.seed(store, pushes: 0)
            _ = try await store.enqueue(SQLiteGroupCommitTests.submit("k0", digest: 1), nowMs: 1)
            // The server refuses the third push of the group: the statement, and so the whole group, fails.
            try await store.executeForTesting(
                """
                CREATE FUNCTION no_room() RETURNS trigger AS $$
                BEGIN
                  IF (SELECT count(*) FROM pushes) >= 4 THEN
                    RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full';
                  END IF;
                  RETURN NEW;
                END
                $$ LANGUAGE plpgsql
                """
            )
            try await store.executeForTesting(
                "CREATE TRIGGER no_room BEFORE INSERT ON pushes FOR EACH ROW EXECUTE FUNCTION no_room()"
            )
            let groupsBefore = store.enqueueGroups
            let submits = (1...3).map { SQLiteGroupCommitTests.submit("full\($0)", digest: UInt8($0)) }
            let results = try await Self.enqueueAsOneGroup(store, [submits])

            #expect(store.enqueueGroups == groupsBefore + 1)
            for result in results {
                #expect(throws: RelayError(.storageFull, "")) { try result.get() }
            }
            #expect(try await store.counts() == [.queued: 2])
            try await store.executeForTesting("DROP TRIGGER no_room ON pushes")
            // Nothing was claimed: the same submits are first submits now, not duplicates.
            let again = try await Self.enqueueAsOneGroup(store, [submits])
            for result in again { #expect(try result.get().duplicate == false) }
            #expect(try await store.counts() == [.queued: 8])
        }
    }

    @Test(
        "two instances whose groups hold the same 64 keys in opposite orders: no deadlock, each key stored once",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote)
    )
    func opposedGroupsOnTwoInstances() async throws {
        let url = try await PostgresTestServer.freshDatabaseURL()
        try await PostgresTestServer.withStore(url: url) { first in
            try await first.migrate()
            try await RelayStoreContractTests.seed(first, pushes: 0)
            try await PostgresTestServer.withStore(url: url) { second in
                for round in 0..<3 {
                    let submits = (0..<64).map {
                        SQLiteGroupCommitTests.submit("r\(round)-k\($0)", digest: UInt8($0), bodyBytes: 2048)
                    }
                    // Each store's group in its own order, one submit per stage so that the order is known.
                    let releaseFirst = await first.holdEnqueues()
                    let releaseSecond = await second.holdEnqueues()
                    let firstTasks = try await Self.lineUp(first, submits.map { [$0] })
                    let secondTasks = try await Self.lineUp(second, submits.reversed().map { [$0] })
                    releaseFirst()
                    releaseSecond()
                    var outcomes: [EnqueueOutcome] = []
                    for task in firstTasks + secondTasks { outcomes.append(try await task.value.get()) }
                    // Every key was claimed by exactly one of the two groups; the other answered its duplicate.
                    #expect(outcomes.filter { !$0.duplicate }.count == 64)
                    #expect(outcomes.filter(\.duplicate).count == 64)
                    #expect(try await first.counts() == [.queued: 128 * (round + 1)])
                }
            }
        }
    }

    @Test(
        "a submit that waited for a hung group is answered within its own bound (503 naming it), not after two",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote)
    )
    func waitingCountsAgainstTheBound() async throws {
        let url = try await PostgresTestServer.freshDatabaseURL()
        let bound = Duration.seconds(3)
        try await PostgresRelayStore.withStore(url: url, operationTimeout: bound, logger: Logger(label: "pg")) {
            store in
            try await store.migrate()
            try await RelayStoreContractTests.seed(store, pushes: 0)
            // Every claim now hangs past the bound, as on a server that stopped answering mid-statement.
            try await store.executeForTesting(
                "CREATE FUNCTION hang() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(8); RETURN NEW; END $$ "
                    + "LANGUAGE plpgsql"
            )
            try await store.executeForTesting(
                "CREATE TRIGGER hang BEFORE INSERT ON submissions FOR EACH ROW EXECUTE FUNCTION hang()"
            )
            let enqueue = { @Sendable (key: String) async -> (Result<EnqueueOutcome, RelayError>, Duration) in
                let start = ContinuousClock.now
                do throws(RelayError) {
                    let outcome = try await store.enqueue(SQLiteGroupCommitTests.submit(key, digest: 1), nowMs: 5)
                    return (.success(outcome), ContinuousClock.now - start)
                } catch {
                    return (.failure(error), ContinuousClock.now - start)
                }
            }
            // A plain timer of the same bound beside each submit: how late the machine runs timers in that window
            // (a loaded 2-core machine running the suite in parallel can run them seconds late). A submit's answer
            // is judged against its own bound plus that lateness.
            let timer = { @Sendable () async -> Duration in
                let start = ContinuousClock.now
                try? await Task.sleep(for: bound)
                return ContinuousClock.now - start - bound
            }
            async let firstLateness = timer()
            async let first = enqueue("hung-1")
            // The second arrives half-way through the first group's bound, so it waits for that group to end.
            try await Task.sleep(for: bound / 2)
            async let secondLateness = timer()
            let second = await enqueue("hung-2")
            let firstAnswer = await first
            let (firstLate, secondLate) = await (firstLateness, secondLateness)

            for (result, _) in [firstAnswer, second] {
                #expect(throws: RelayError(.storageUnavailable, "")) { try result.get() }
                if case .failure(let error) = result {
                    #expect(error.message.contains("did not answer within 3.0 seconds during enqueue"), "\(error)")
                }
            }
            // Its own bound (3 s), with room; waiting the first group's bound out and then a whole bound of its
            // own would take 4.5 s, well past a timer that runs no later than the submit's own.
            #expect(
                second.1 < bound * 1.25 + secondLate,
                "the second submit was answered after \(second.1), timers \(secondLate) late"
            )
            #expect(second.1 >= bound / 4, "the second submit did not wait for the hung group: \(second.1)")
            #expect(
                firstAnswer.1 < bound * 1.25 + firstLate,
                "the first submit was answered after \(firstAnswer.1), timers \(firstLate) late"
            )
        }
    }

    /// Starts one context read per request while the line is held, waits until all of them wait, then lets the
    /// line go: they are read as one group.
    static func readAsOneGroup(
        _ store: PostgresRelayStore,
        _ requests: [(String, [UInt8]?)]
    ) async throws -> [Result<SubmitContext, RelayError>] {
        let release = await store.holdContextReads()
        let tasks = requests.map { userID, hash in
            Task { () -> Result<SubmitContext, RelayError> in
                do throws(RelayError) {
                    return .success(try await store.submitContext(userID: userID, tokenHash: hash))
                } catch {
                    return .failure(error)
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while store.waitingContextReads < tasks.count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(store.waitingContextReads == tasks.count, "not every read reached the line")
        release()
        var results: [Result<SubmitContext, RelayError>] = []
        for task in tasks { results.append(await task.value) }
        return results
    }

    @Test(
        "seven waiting context reads of three users: one statement, each its own user's list, token and devices",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote)
    )
    func contextsInOneGroup() async throws {
        try await RelayStoreContractTests.withPostgres { store in
            // u: a list of a and b, both registered, two tokens. w: a list of one device that never registered,
            // no token. v: nothing.
            try await RelayStoreContractTests.seed(store, pushes: 0)
            try await store.replaceDeliveryTokens(userID: "u", hashes: [[8], [9]], nowMs: 1)
            var other = RelayStoreContractTests.list(version: 1, devices: ["c"])
            other.userID = "w"
            _ = try await store.publish(other, nowMs: 1)

            let groupsBefore = store.contextReadGroups
            let requests: [(String, [UInt8]?)] = [
                ("u", [8]), ("u", [9]), ("u", [7]), ("u", nil), ("v", [8]), ("u", [8]), ("w", nil),
            ]
            let results = try await Self.readAsOneGroup(store, requests)
            #expect(store.contextReadGroups == groupsBefore + 1)
            let contexts = try results.map { try $0.get() }
            #expect(contexts.map(\.hasList) == [true, true, true, true, false, true, true])
            #expect(contexts.map(\.tokenIsValid) == [true, true, false, false, false, true, false])
            #expect(contexts.map(\.tokenCount) == [2, 2, 2, 2, 0, 2, 0])
            #expect(
                contexts.map { $0.devices.map(\.deviceID) } == [
                    ["a", "b"], ["a", "b"], ["a", "b"], ["a", "b"], [], ["a", "b"], ["c"],
                ]
            )
            #expect(contexts[0].devices.map(\.pushState) == [.active, .active])
            #expect(contexts[6].devices.map(\.pushState) == [.none])
            // Each is what a lone read answers.
            for (request, context) in zip(requests, contexts) {
                #expect(try await store.submitContext(userID: request.0, tokenHash: request.1) == context)
            }
        }
    }

    @Test(
        "a group's context read that fails: each request gets storage-unavailable, and the next group reads again",
        .enabled(if: PostgresTestServer.url != nil, PostgresTestServer.skipNote)
    )
    func failedContextGroup() async throws {
        try await RelayStoreContractTests.withPostgres { store in
            try await RelayStoreContractTests.seed(store, pushes: 0)
            try await store.executeForTesting("ALTER TABLE devices RENAME TO devices_away")
            let failed = try await Self.readAsOneGroup(store, [("u", nil), ("v", [1]), ("u", [2])])
            #expect(failed.count == 3)
            for result in failed {
                #expect(throws: RelayError(.storageUnavailable, "")) { try result.get() }
            }
            try await store.executeForTesting("ALTER TABLE devices_away RENAME TO devices")
            let again = try await Self.readAsOneGroup(store, [("u", nil), ("v", [1])])
            #expect(try again.map { try $0.get().hasList } == [true, false])
        }
    }
}

import Foundation
import Locking
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
}

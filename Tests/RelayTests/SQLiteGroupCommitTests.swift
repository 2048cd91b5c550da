import Foundation
import Testing

@testable import Relay

/// The embedded store commits the submits that wait together in one transaction (one sync to disk), each in its
/// own savepoint. These tests line submits up behind a held queue, so the group is known, not hoped for.
@Suite("SQLite group commit: one transaction for the submits that wait, each still all or nothing")
struct SQLiteGroupCommitTests {
    /// A submit of two pushes to "u"'s devices "a" and "b".
    static func submit(_ key: String, digest: UInt8, bodyBytes: Int = 3) -> NewSubmit {
        NewSubmit(
            userID: "u",
            idempotencyKey: key,
            requestDigest: [digest],
            pushes: ["a", "b"].map {
                ($0, UUID().uuidString.lowercased(), [UInt8](repeating: digest, count: bodyBytes))
            }
        )
    }

    /// Starts each stage's submits as concurrent enqueues while the queue is held (a stage once every submit of
    /// the stage before it waits: the group's order between stages is known), waits until all of them wait for the
    /// same commit, then lets the queue go.
    static func enqueueAsOneGroup(
        _ store: SQLiteRelayStore,
        _ stages: [[NewSubmit]]
    ) async throws -> [Result<EnqueueOutcome, RelayError>] {
        let release = store.holdQueue()
        let tasks = try await Self.lineUp(store, stages, waiting: { store.waitingEnqueues })
        release()
        var results: [Result<EnqueueOutcome, RelayError>] = []
        for task in tasks { results.append(await task.value) }
        return results
    }

    /// Starts the stages' submits on a store whose group is held, each stage once every submit before it waits
    /// (`waiting`: the store's count of waiting submits), and returns once all of them wait.
    static func lineUp<Store: RelayStore>(
        _ store: Store,
        _ stages: [[NewSubmit]],
        waiting: () -> Int
    ) async throws -> [Task<Result<EnqueueOutcome, RelayError>, Never>] {
        var tasks: [Task<Result<EnqueueOutcome, RelayError>, Never>] = []
        for stage in stages {
            tasks += stage.map { submit in
                Task { () -> Result<EnqueueOutcome, RelayError> in
                    do throws(RelayError) {
                        return .success(try await store.enqueue(submit, nowMs: 5))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            let deadline = ContinuousClock.now + .seconds(30)
            while waiting() < tasks.count {
                guard ContinuousClock.now < deadline else {
                    Issue.record("only \(waiting()) of \(tasks.count) submits reached the group")
                    break
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        return tasks
    }

    /// The group every store must make of twelve submits that wait together: ten fresh ones, a reused key and a
    /// retry of the first. `enqueueAsOneGroup` lines the stages up as one group; `groups` counts the store's group
    /// commits. Also checked: each accepted push is stored queued, and nothing of the refused submit or the retry.
    static func checkOneGroup<Store: RelayStore>(
        _ store: Store,
        groups: () -> Int,
        enqueueAsOneGroup: ([[NewSubmit]]) async throws -> [Result<EnqueueOutcome, RelayError>]
    ) async throws {
        try await RelayStoreContractTests.seed(store, pushes: 0)
        let earlier = try await store.enqueue(Self.submit("k0", digest: 1), nowMs: 1)
        let groupsBefore = groups()

        let fresh = (1...10).map { Self.submit("k\($0)", digest: UInt8($0)) }
        var retry = fresh[0]
        retry.pushes = retry.pushes.map { ($0.deviceID, UUID().uuidString.lowercased(), $0.envelope) }
        let reused = Self.submit("k0", digest: 99)
        let results = try await enqueueAsOneGroup([fresh + [reused], [retry]])

        #expect(groups() == groupsBefore + 1)
        for (index, result) in results.prefix(10).enumerated() {
            let outcome = try result.get()
            #expect(outcome.duplicate == false)
            #expect(outcome.pushes.map(\.pushID) == fresh[index].pushes.map(\.pushID))
            for push in outcome.pushes {
                #expect(try await store.push(push.pushID)?.state == .queued)
            }
        }
        #expect(throws: RelayError(.idempotencyKeyReused, "")) { try results[10].get() }
        let duplicate = try results[11].get()
        #expect(duplicate.duplicate)
        #expect(duplicate.pushes.map(\.pushID) == fresh[0].pushes.map(\.pushID))
        // k0's two pushes and ten new submits of two: nothing of the refused one, nothing twice.
        #expect(try await store.counts() == [.queued: 22])
        #expect(try await store.push(earlier.pushes[0].pushID)?.state == .queued)
        #expect(try await store.push(retry.pushes[0].pushID) == nil)
    }

    @Test("twelve waiting submits: one commit; a reused key refused alone; a retry in the same group is a duplicate")
    func oneGroup() async throws {
        try await RelayStoreContractTests.withSQLite { store in
            try await Self.checkOneGroup(store, groups: { store.enqueueGroupCommits }) { stages in
                try await Self.enqueueAsOneGroup(store, stages)
            }
        }
    }

    @Test("a full disk during a group: every submit of the group gets storage-full and nothing of any is stored")
    func fullDiskFailsTheGroup() async throws {
        try await RelayStoreContractTests.withSQLite { store in
            try await RelayStoreContractTests.seed(store, pushes: 0)
            _ = try await store.enqueue(Self.submit("k0", digest: 1), nowMs: 1)
            try store.capAtCurrentSize()
            let commitsBefore = store.enqueueGroupCommits

            // Bodies larger than a page: each submit needs pages the capped file cannot get.
            let submits = (1...3).map { Self.submit("big\($0)", digest: UInt8($0), bodyBytes: 8192) }
            let results = try await Self.enqueueAsOneGroup(store, [submits])

            #expect(store.enqueueGroupCommits == commitsBefore)
            for result in results {
                #expect(throws: RelayError(.storageFull, "")) { try result.get() }
            }
            #expect(try await store.counts() == [.queued: 2])
            await #expect(throws: RelayError(.storageFull, "")) { try await store.ping() }
        }
    }

    /// Two pushes of "u" enqueued, then leased by "w" (attempt 1): outcomes for a worker to record.
    static func leasedPushes(_ store: SQLiteRelayStore) async throws -> [LeasedPush] {
        try await RelayStoreContractTests.seed(store, pushes: 2)
        let leased = try await store.lease(owner: "w", limit: 10, nowMs: 1, leaseMs: 60_000)
        #expect(leased.count == 2)
        return leased
    }

    /// Holds the queue, starts `leased`'s outcomes (delivered) as worker "w" records them, then `submits` as
    /// concurrent enqueues, lets the queue go once all of them wait for the same commit, and returns their results.
    static func completeAndEnqueueAsOneGroup(
        _ store: SQLiteRelayStore,
        _ leased: [LeasedPush],
        _ submits: [NewSubmit]
    ) async throws -> (
        completed: Result<[CompletionResult], RelayError>, enqueued: [Result<EnqueueOutcome, RelayError>]
    ) {
        let release = store.holdQueue()
        let completions = leased.map {
            Completion(pushID: $0.pushID, outcome: .delivered(status: 200), attempt: $0.attempts)
        }
        let completing = Task { () -> Result<[CompletionResult], RelayError> in
            do throws(RelayError) {
                return .success(try await store.complete(completions, owner: "w", nowMs: 2))
            } catch {
                return .failure(error)
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while store.waitingCompletions < 1, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(store.waitingCompletions == 1)
        let tasks = try await Self.lineUp(store, [submits], waiting: { store.waitingEnqueues })
        release()
        var enqueued: [Result<EnqueueOutcome, RelayError>] = []
        for task in tasks { enqueued.append(await task.value) }
        return (await completing.value, enqueued)
    }

    @Test("a worker's outcomes and the submits that wait with them share one commit")
    func outcomesJoinTheGroup() async throws {
        try await RelayStoreContractTests.withSQLite { store in
            let leased = try await Self.leasedPushes(store)
            let (commitsBefore, groupsBefore) = (store.groupWriteCommits, store.enqueueGroupCommits)
            let submits = (1...3).map { Self.submit("k\($0)", digest: UInt8($0)) }

            let (completed, enqueued) = try await Self.completeAndEnqueueAsOneGroup(store, leased, submits)

            #expect(try completed.get() == [.recorded, .recorded])
            for result in enqueued { #expect(try result.get().pushes.count == 2) }
            #expect(store.groupWriteCommits == commitsBefore + 1)
            #expect(store.enqueueGroupCommits == groupsBefore + 1)
            for push in leased { #expect(try await store.push(push.pushID)?.state == .delivered) }
            #expect(try await store.counts() == [.delivered: 2, .queued: 6])
            // Recorded again by the same lease (an answer lost): the same answer, nothing counted twice.
            let again = try await store.complete(
                leased.map { Completion(pushID: $0.pushID, outcome: .delivered(status: 200), attempt: $0.attempts) },
                owner: "w",
                nowMs: 3
            )
            #expect(again == [.recorded, .recorded])
            #expect(store.groupWriteCommits == commitsBefore + 2)
        }
    }

    @Test("a full disk during a shared commit: the submits get storage-full, the outcomes are recorded on their own")
    func fullDiskSharedCommit() async throws {
        try await RelayStoreContractTests.withSQLite { store in
            let leased = try await Self.leasedPushes(store)
            try store.capAtCurrentSize()
            let (commitsBefore, groupsBefore) = (store.groupWriteCommits, store.enqueueGroupCommits)
            // Bodies larger than a page: each submit needs pages the capped file cannot get; the outcomes do not.
            let submits = (1...3).map { Self.submit("big\($0)", digest: UInt8($0), bodyBytes: 8192) }

            let (completed, enqueued) = try await Self.completeAndEnqueueAsOneGroup(store, leased, submits)

            #expect(try completed.get() == [.recorded, .recorded])
            for result in enqueued {
                #expect(throws: RelayError(.storageFull, "")) { try result.get() }
            }
            #expect(store.groupWriteCommits == commitsBefore + 1)
            #expect(store.enqueueGroupCommits == groupsBefore)
            #expect(try await store.counts() == [.delivered: 2])
            // Health still says the disk is full: the outcomes' commit did not clear the submits' refusal.
            await #expect(throws: RelayError(.storageFull, "")) { try await store.ping() }
        }
    }
}

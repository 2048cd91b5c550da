import Locking

/// Lines concurrent requests up so that one call of `run` serves all those that wait, one group at a time.
///
/// A request that finds no group running leads one at once: it runs its own input with every request that waits
/// (up to `maxGroup`). Requests that arrive meanwhile wait; when the group ends, its leader hands the lead to the
/// first of them, which runs the next group with the others. So under load each group is one round trip and one
/// commit for many requests, and an idle store answers a lone request without any added wait.
///
/// A group runs in a task of its own, not in its leader's: a leader whose request is cancelled (its client went
/// away) does not cancel the others' work.
final class GroupCommit<Input: Sendable, Output: Sendable>: Sendable {
    private enum Turn: Sendable {
        case done(Output)
        case lead
    }

    private struct Waiting: Sendable {
        var input: Input
        var continuation: CheckedContinuation<Turn, Never>
    }

    private struct State: Sendable {
        var waiting: [Waiting] = []
        /// A group is running, or its leader is being handed on (or a test holds the line).
        var running = false
        var groups = 0
    }

    private let state = PThreadMutex(State())
    private let maxGroup: Int

    /// - Parameter maxGroup: the most inputs one group gets (at least 1).
    init(maxGroup: Int) {
        self.maxGroup = max(maxGroup, 1)
    }

    /// The output of `input`, from the group it ran in.
    ///
    /// - Parameter run: answers each input of a group, in order: exactly one output per input. Every caller of one
    ///   line passes the same function; the group's leader runs it.
    func submit(_ input: Input, run: @escaping @Sendable ([Input]) async -> [Output]) async -> Output {
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let lead = self.state.withLock { state -> Bool in
                guard state.running else {
                    state.running = true
                    return true
                }
                state.waiting.append(Waiting(input: input, continuation: continuation))
                return false
            }
            if lead { continuation.resume(returning: .lead) }
        }
        switch turn {
        case .done(let output):
            return output
        case .lead:
            return await self.lead(input, run: run)
        }
    }

    private func lead(_ input: Input, run: @escaping @Sendable ([Input]) async -> [Output]) async -> Output {
        let others = self.state.withLock { state -> [Waiting] in
            state.groups += 1
            let count = min(state.waiting.count, self.maxGroup - 1)
            defer { state.waiting.removeFirst(count) }
            return Array(state.waiting.prefix(count))
        }
        let inputs = [input] + others.map(\.input)
        let outputs = await Task { await run(inputs) }.value
        precondition(outputs.count == inputs.count, "a group answers each of its inputs once")
        self.handOn()
        for (waiting, output) in zip(others, outputs.dropFirst()) {
            waiting.continuation.resume(returning: .done(output))
        }
        return outputs[0]
    }

    /// Gives the lead to the first waiting request, or ends the line's run when none waits.
    private func handOn() {
        let next = self.state.withLock { state -> Waiting? in
            guard !state.waiting.isEmpty else {
                state.running = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.continuation.resume(returning: .lead)
    }

    /// Groups run so far.
    var groups: Int { self.state.withLock { $0.groups } }

    /// Requests waiting for a group (not the running one).
    var waiting: Int { self.state.withLock { $0.waiting.count } }

    /// Holds the line as if a group were running, until the returned function is called: requests made meanwhile
    /// wait and then run as one group (tests that need the group known, not hoped for). Waits while a group runs.
    func hold() async -> @Sendable () -> Void {
        while true {
            let held = self.state.withLock { state -> Bool in
                guard !state.running else { return false }
                state.running = true
                return true
            }
            if held { break }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return { self.handOn() }
    }
}

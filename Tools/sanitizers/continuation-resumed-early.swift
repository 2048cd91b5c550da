// The false positive that Tools/sanitizers/tsan.supp suppresses (docs/SANITIZERS.md, finding 6), on its own:
// a continuation resumed on another thread before its task awaits it. The relaxed atomics order nothing for
// ThreadSanitizer, so the only happens-before edge between the threads is the Swift runtime's, which the
// resumed-before-await path does not tell TSan about: without the suppression, TSan reports the task's next
// continuation (a write in `withUnsafeContinuation`) against the resume's read (`UnsafeContinuation.resume`).
import Foundation
import Synchronization

final class Flag: Sendable { let done = Atomic<Bool>(false) }

@main struct ContinuationResumedEarly {
    static func main() async {
        var sum = 0
        for i in 0..<200 {
            sum += await withUnsafeContinuation { (continuation: UnsafeContinuation<Int, Never>) in
                let flag = Flag()
                Thread {
                    continuation.resume(returning: i)
                    flag.done.store(true, ordering: .relaxed)
                }.start()
                while !flag.done.load(ordering: .relaxed) {}
            }
        }
        print(sum)
    }
}

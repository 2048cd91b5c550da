// A real data race (two threads incrementing one field without a lock): the suppressions must leave it reported.
import Foundation

final class Box: @unchecked Sendable { var count = 0 }

@inline(never) func increment(_ box: Box) { box.count += 1 }

let box = Box()
Thread { for _ in 0..<1000 { increment(box) } }.start()
for _ in 0..<1000 { increment(box) }
Thread.sleep(forTimeInterval: 0.2)
print(box.count > 0 ? "done" : "none")

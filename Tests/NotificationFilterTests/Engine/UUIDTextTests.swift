import Foundation
import Testing

@testable import NotificationFilter

@Suite("UUID text")
struct UUIDTextTests {
    @Test("uuidText is uuidString, byte for byte: a fixed id, the extremes and 10,000 random ids")
    func sameAsFoundation() throws {
        let fixed = try #require(UUID(uuidString: "0123abcd-4567-89EF-a0b1-C2D3E4F5A6B7"))
        #expect(fixed.uuidText == "0123ABCD-4567-89EF-A0B1-C2D3E4F5A6B7")
        let zero = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        #expect(zero.uuidText == "00000000-0000-0000-0000-000000000000")
        let ones = UUID(
            uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)
        )
        #expect(ones.uuidText == "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")
        var differing = 0
        for _ in 0..<10_000 {
            let id = UUID()
            if id.uuidText != id.uuidString { differing += 1 }
        }
        #expect(differing == 0)
    }
}

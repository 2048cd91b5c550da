import Testing

@Test func placeholderE2EECoreTests() { #expect(1 + 1 == 2) }

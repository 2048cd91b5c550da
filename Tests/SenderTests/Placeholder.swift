import Testing

@Test func placeholderSenderTests() { #expect(1 + 1 == 2) }

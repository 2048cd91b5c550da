import Testing

@Test func placeholderNotificationFilterTests() { #expect(1 + 1 == 2) }

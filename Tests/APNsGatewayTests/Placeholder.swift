import Testing

@Test func placeholderAPNsGatewayTests() { #expect(1 + 1 == 2) }

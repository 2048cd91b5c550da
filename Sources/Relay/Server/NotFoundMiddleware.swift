import Hummingbird
import RelayClient

/// Turns the router's own refusal of a path it has no route for (Hummingbird's `HTTPError(.notFound)`, which carries
/// no reason code) into the API's `not-found` refusal, so every answer that is not a success carries a reason code.
///
/// The routes themselves throw only ``RelayError``, which answers for itself (``RelayError`` is an
/// `HTTPResponseError`); a path with a route but not for the request's method also comes here as not found.
struct NotFoundMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            throw RelayError(
                .notFound,
                "no such endpoint: \(request.method) \(request.uri.path); see docs/RELAY.md for the v1 API"
            )
        }
    }
}

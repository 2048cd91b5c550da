public import Hummingbird
import RelayClient

/// Turns the router's own refusals (no such path, wrong method) into the API's JSON refusal, so every answer
/// that is not a success carries a reason code.
public struct RelayErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    public init() {}

    public func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            let code: RelayError.Code = error.status == .methodNotAllowed ? .methodNotAllowed : .notFound
            let message =
                code == .notFound
                ? "no such endpoint: \(request.method) \(request.uri.path); see docs/RELAY.md for the v1 API"
                : "\(request.method) is not allowed on \(request.uri.path)"
            var response = RelayRouter.json(
                error.status,
                RelayAPI.ErrorBody(error: code.rawValue, message: message)
            )
            response.headers.append(contentsOf: error.headers)
            return response
        }
    }
}

import { ApolloLink } from '@apollo/client';
import { print } from 'graphql';
import { Observable } from 'rxjs';

// ResumableWsLink is GraphQLWsLink for Parley's subscriptions that resume from a cursor
// (messageAdded, messageStream, conversationsChanged). After a reconnection graphql-ws
// subscribes again with the payload it was first given; this link keeps that payload's
// `after` at the cursor of the last event received, so the subscription goes on where
// it stopped instead of replaying from the cursor it started with. The operation must
// declare `$after` and select `cursor` on the subscription's field.
export class ResumableWsLink extends ApolloLink {
  constructor(client) {
    super();
    this.client = client;
  }

  request(operation) {
    const { query, variables, operationName, extensions } = operation;
    const payload = { query: print(query), variables: { ...variables }, operationName, extensions };
    const resumable = query.definitions.some((d) => d.kind === 'OperationDefinition' &&
      d.variableDefinitions?.some((v) => v.variable.name.value === 'after'));
    return new Observable((observer) => this.client.subscribe(payload, {
      next: (result) => {
        const event = result.data && Object.values(result.data)[0];
        if (resumable && typeof event?.cursor === 'string') payload.variables.after = event.cursor;
        observer.next(result);
      },
      error: (err) => observer.error(err),
      complete: () => observer.complete(),
    }));
  }
}

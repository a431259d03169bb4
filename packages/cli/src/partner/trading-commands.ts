// `counterpart deposit|withdraw|balance|quote|execute` and `counterpart order get|list`: funding,
// balances, two-step trading and orders (docs/reference.md §4.2 to §4.5), through the SDK, signed as the partner
// target.ts resolves. Amounts are passed to the service as given (it answers 422 for a bad
// one) and printed as returned, or in plain notation with --plain; never rounded. With --json,
// deposit, withdraw and execute print the SDK's result, {"order": {...}, "replayed": false};
// `replayed` is true when the reference named the same order made earlier (nothing new applied).

import { type OrderResult, orderSources, orderStatuses } from "@counterpart/sdk";
import { type Command, Option } from "commander";
import { UsageError } from "../common/errors.ts";
import type { Env } from "../common/local-files.ts";
import { emit } from "../common/output.ts";
import { withGlobalOptions } from "../common/program.ts";
import { callApi, partnerApi } from "./api.ts";
import {
  type AmountCommandOptions,
  collect,
  type PageOptions,
  pageOptions,
  pageParams,
  partnerCommand,
  plainOption,
  positiveId,
} from "./options.ts";
import {
  type AmountOptions,
  count,
  formatBalance,
  formatBalanceTable,
  formatOrder,
  formatOrderTable,
  formatQuote,
  pageFooter,
  withFooter,
} from "./output.ts";

const clientFlag = "--client <partner_client_id>";
const clientHelp = "the client (partner_client_id)";

/** The order a deposit, withdrawal or execution created, or the earlier one a replay found. */
function formatCreated(result: OrderResult, options: AmountOptions): string {
  const { order } = result;
  const extra: [string, string][] = result.replayed
    ? [
        [
          "replayed",
          "yes: this reference names an order made earlier by the same request; nothing new was applied",
        ],
      ]
    : [];
  return formatOrder(order, options, extra);
}

export function registerTradingCommands(program: Command, env: Env): void {
  for (const [name, kind] of [
    ["deposit", "deposits"],
    ["withdraw", "withdrawals"],
  ] as const) {
    plainOption(
      partnerCommand(
        program,
        name,
        kind === "deposits"
          ? "credit a fiat deposit to a client (completed on return)"
          : "pay out a fiat withdrawal from a client's available balance (completed on return)",
      )
        .requiredOption(clientFlag, clientHelp)
        .requiredOption("--asset <asset>", "a fiat asset, e.g. AED")
        .requiredOption("--amount <amount>", "a decimal greater than zero, e.g. 100.50")
        .requiredOption("--ref <partner_order_ref>", "your unique reference for this order"),
    ).action(
      withGlobalOptions(
        async (
          options: AmountCommandOptions & { client: string; asset: string; amount: string; ref: string },
        ) => {
          const api = partnerApi(options, env);
          const request = {
            partner_client_id: options.client,
            asset_id: options.asset,
            amount: options.amount,
            partner_order_ref: options.ref,
          };
          const result = await callApi(api, (c) => c[kind].create(request));
          emit(options, { order: result.order, replayed: result.replayed }, () =>
            formatCreated(result, options),
          );
        },
      ),
    );
  }

  plainOption(
    partnerCommand(program, "balance", "show a client's balances (every asset), or one asset's")
      .requiredOption(clientFlag, clientHelp)
      .option("--asset <asset>", "only this asset, e.g. BTC"),
  ).action(
    withGlobalOptions(async (options: AmountCommandOptions & { client: string; asset?: string }) => {
      const api = partnerApi(options, env);
      const asset = options.asset;
      if (asset !== undefined) {
        const balance = await callApi(api, (c) => c.balances.get(options.client, asset));
        emit(options, { ...balance }, () => formatBalance(balance, options));
        return;
      }
      const items = await callApi(api, (c) => c.balances.list(options.client));
      emit(options, { items }, () => formatBalanceTable(items, options));
    }),
  );

  plainOption(
    partnerCommand(program, "quote", "price a trade; execute its token before the quote's lifetime runs out")
      .requiredOption(clientFlag, clientHelp)
      .requiredOption("--pair <pair>", "asset pair, e.g. BTC-AED")
      .addOption(new Option("--side <side>", "buy or sell").choices(["buy", "sell"]).makeOptionMandatory())
      .requiredOption("--amount <amount>", "amount of the pair's base asset, e.g. 0.01"),
  ).action(
    withGlobalOptions(
      async (
        options: AmountCommandOptions & {
          client: string;
          pair: string;
          side: "buy" | "sell";
          amount: string;
        },
      ) => {
        const api = partnerApi(options, env);
        const quote = await callApi(api, (c) =>
          c.quotes.create({
            partner_client_id: options.client,
            asset_pair: options.pair,
            side: options.side,
            base_amount: options.amount,
          }),
        );
        emit(options, { ...quote }, () =>
          formatQuote(quote, { client: options.client, pair: options.pair, side: options.side }, options),
        );
      },
    ),
  );

  plainOption(
    partnerCommand(program, "execute", "execute a quote: the trade's order, final on return")
      .requiredOption(clientFlag, clientHelp)
      .requiredOption("--token <token>", "the quote's token")
      .option(
        "--ref <partner_order_ref>",
        "your unique reference (recommended: lets a lost answer be recovered)",
      ),
  ).action(
    withGlobalOptions(
      async (options: AmountCommandOptions & { client: string; token: string; ref?: string }) => {
        const api = partnerApi(options, env);
        const result = await callApi(api, (c) =>
          c.quotes.execute({
            partner_client_id: options.client,
            token: options.token,
            ...(options.ref === undefined ? {} : { partner_order_ref: options.ref }),
          }),
        );
        emit(options, { order: result.order, replayed: result.replayed }, () =>
          formatCreated(result, options),
        );
      },
    ),
  );

  const order = program.command("order").description("a partner's orders (partner API)");

  plainOption(
    partnerCommand(order, "get", "show one order, by its id or by your reference")
      .argument("[id]", "the order's numeric id")
      .option("--ref <partner_order_ref>", "find the order by your reference instead"),
  ).action(
    withGlobalOptions(async (id: string | undefined, options: AmountCommandOptions & { ref?: string }) => {
      const ref = options.ref;
      if (id !== undefined && ref !== undefined)
        throw new UsageError("give the order's ID or --ref REF, not both");
      if (id === undefined && ref === undefined) throw new UsageError("give the order's ID or --ref REF");
      const orderId = id === undefined ? null : positiveId(id, "the order id");
      const api = partnerApi(options, env);
      const found = await callApi(api, (c) =>
        orderId === null ? c.orders.getByRef(ref!) : c.orders.get(orderId),
      );
      emit(options, { ...found }, () => formatOrder(found, options));
    }),
  );

  plainOption(
    pageOptions(
      partnerCommand(order, "list", "list orders, newest first")
        .option(clientFlag, "only this client's orders")
        .addOption(new Option("--status <status...>", "only orders in these statuses").choices(orderStatuses))
        .addOption(new Option("--source <source...>", "only orders from these sources").choices(orderSources))
        .option("--from <datetime>", "created on or after (ISO 8601)")
        .option("--to <datetime>", "created on or before (ISO 8601)"),
      "order",
    ),
  ).action(
    withGlobalOptions(
      async (
        options: AmountCommandOptions &
          PageOptions & {
            client?: string;
            status?: (typeof orderStatuses)[number][];
            source?: (typeof orderSources)[number][];
            from?: string;
            to?: string;
          },
      ) => {
        const api = partnerApi(options, env);
        const filters = {
          ...(options.client === undefined ? {} : { partner_client_id: options.client }),
          ...(options.status === undefined ? {} : { status: options.status }),
          ...(options.source === undefined ? {} : { source: options.source }),
          ...(options.from === undefined ? {} : { from_datetime: options.from }),
          ...(options.to === undefined ? {} : { to_datetime: options.to }),
          ...pageParams(options),
        };
        if (options.all) {
          const items = await callApi(api, (c) => collect(c.orders.listAll(filters)));
          emit(options, { items, total: items.length }, () =>
            withFooter(formatOrderTable(items, options), items.length, count(items.length, "order")),
          );
          return;
        }
        const page = await callApi(api, (c) => c.orders.list(filters));
        emit(options, { ...page }, () =>
          withFooter(formatOrderTable(page.items, options), page.items.length, pageFooter(page, "order")),
        );
      },
    ),
  );
}

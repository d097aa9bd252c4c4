"""A small shop's code, twelve modules with one bug in them, for lesson 16's exploration task.

`make_shop(folder)` writes the package `shop/` into folder; `bug_fixed(folder)` runs
shop/pricing.py from there and says whether a 10% discount now takes off 10%. The bug is one line of
shop/pricing.py (BUG, where FIX belongs), the ninth module in the listing: finding it means
reading most of the package."""

from pathlib import Path

BUGGY = "shop/pricing.py"
BUG = "    return round(price - price * percent / 10, 2)"
FIX = "    return round(price - price * percent / 100, 2)"

MODULES = {
    "audit.py": '''"""Audit log: every change to an order, in the order it happened."""

from datetime import datetime, timezone

LOG: list[dict] = []


def record(order_id: str, action: str, detail: str = "") -> dict:
    """Add one line to the audit log and return it."""
    entry = {"order": order_id, "action": action, "detail": detail,
             "at": datetime.now(timezone.utc).isoformat()}
    LOG.append(entry)
    return entry


def history(order_id: str) -> list[dict]:
    """Every entry of one order, oldest first."""
    return [entry for entry in LOG if entry["order"] == order_id]


def last_action(order_id: str) -> str | None:
    """What happened to the order most recently, or None."""
    entries = history(order_id)
    return entries[-1]["action"] if entries else None
''',
    "cart.py": '''"""The shopping cart: lines of (sku, quantity), in the order they were added."""


def new_cart() -> dict:
    return {"lines": [], "code": None}


def add(cart: dict, sku: str, quantity: int = 1) -> dict:
    """Add quantity of sku; a sku already in the cart gets the quantity added."""
    if quantity < 1:
        raise ValueError("quantity must be at least 1")
    for line in cart["lines"]:
        if line["sku"] == sku:
            line["quantity"] += quantity
            return cart
    cart["lines"].append({"sku": sku, "quantity": quantity})
    return cart


def remove(cart: dict, sku: str) -> dict:
    cart["lines"] = [line for line in cart["lines"] if line["sku"] != sku]
    return cart


def apply_code(cart: dict, code: str) -> dict:
    """Remember a discount code; checkout looks it up."""
    cart["code"] = code.strip().upper()
    return cart
''',
    "catalog.py": '''"""The catalog: what each sku is and what it costs, in euros."""

PRODUCTS = {
    "TEA-01": {"name": "Green tea, 100 g", "price": 6.50, "weight": 0.12},
    "TEA-02": {"name": "Black tea, 250 g", "price": 9.90, "weight": 0.28},
    "MUG-01": {"name": "Stoneware mug", "price": 14.00, "weight": 0.40},
    "POT-01": {"name": "Glass teapot, 1 l", "price": 32.00, "weight": 0.90},
}


def price_of(sku: str) -> float:
    """The list price of one unit."""
    try:
        return PRODUCTS[sku]["price"]
    except KeyError:
        raise KeyError(f"unknown sku: {sku}") from None


def weight_of(sku: str) -> float:
    return PRODUCTS[sku]["weight"]


def search(words: str) -> list[str]:
    """Skus whose name contains every word, case-insensitively."""
    wanted = words.lower().split()
    return sorted(sku for sku, item in PRODUCTS.items()
                  if all(word in item["name"].lower() for word in wanted))
''',
    "checkout.py": '''"""Checkout: from a cart to the amount the customer pays."""

from shop import catalog, coupons, pricing, shipping, tax


def subtotal(cart: dict) -> float:
    """The list price of every line, before any discount."""
    return round(sum(catalog.price_of(line["sku"]) * line["quantity"]
                     for line in cart["lines"]), 2)


def total(cart: dict, country: str) -> float:
    """What the customer pays: discounted goods, tax on them, then shipping."""
    amount = subtotal(cart)
    percent = coupons.percent_for(cart.get("code"))
    if percent:
        amount = pricing.discounted(amount, percent)
    amount = tax.with_tax(amount, country)
    weight = sum(catalog.weight_of(line["sku"]) * line["quantity"] for line in cart["lines"])
    return round(amount + shipping.cost(weight, country), 2)
''',
    "coupons.py": '''"""Discount codes and what they are worth, in percent."""

CODES = {"WELCOME10": 10, "TEA20": 20, "STAFF30": 30}


def percent_for(code: str | None) -> int:
    """The discount a code gives, in percent; 0 for no code or one we do not know."""
    if not code:
        return 0
    return CODES.get(code.strip().upper(), 0)


def is_valid(code: str) -> bool:
    return percent_for(code) > 0


def describe(code: str) -> str:
    percent = percent_for(code)
    return f"{code}: {percent}% off" if percent else f"{code}: not a valid code"
''',
    "currency.py": '''"""Prices are kept in euros; shown in the customer's currency."""

RATES = {"EUR": 1.0, "USD": 1.08, "GBP": 0.85, "CHF": 0.95}
SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£", "CHF": "CHF "}


def convert(amount_eur: float, currency: str) -> float:
    """An amount in euros, in another currency, to the cent."""
    return round(amount_eur * RATES[currency], 2)


def shown(amount_eur: float, currency: str = "EUR") -> str:
    """An amount as a customer reads it: "€12.50", "$13.50"."""
    return f"{SYMBOLS[currency]}{convert(amount_eur, currency):.2f}"
''',
    "customers.py": '''"""Customers: who they are, where goods go, which currency they see."""

CUSTOMERS = {
    "c-100": {"name": "Ana", "country": "DE", "currency": "EUR"},
    "c-101": {"name": "Ben", "country": "GB", "currency": "GBP"},
    "c-102": {"name": "Chen", "country": "CH", "currency": "CHF"},
}


def country_of(customer_id: str) -> str:
    return CUSTOMERS[customer_id]["country"]


def currency_of(customer_id: str) -> str:
    return CUSTOMERS[customer_id]["currency"]


def greeting(customer_id: str) -> str:
    return f"Hello {CUSTOMERS[customer_id]['name']}, thank you for your order."
''',
    "inventory.py": '''"""Stock on hand, and reservations for orders not yet shipped."""

STOCK = {"TEA-01": 40, "TEA-02": 25, "MUG-01": 12, "POT-01": 5}
RESERVED: dict[str, int] = {}


def available(sku: str) -> int:
    """Units that can still be sold: in stock and not reserved."""
    return STOCK.get(sku, 0) - RESERVED.get(sku, 0)


def reserve(sku: str, quantity: int) -> None:
    """Hold units for an order; refuses more than are available."""
    if quantity > available(sku):
        raise ValueError(f"only {available(sku)} of {sku} available")
    RESERVED[sku] = RESERVED.get(sku, 0) + quantity


def release(sku: str, quantity: int) -> None:
    RESERVED[sku] = max(RESERVED.get(sku, 0) - quantity, 0)
''',
    "pricing.py": '''"""Price arithmetic: discounts and rounding, kept in one place."""


def discounted(price: float, percent: float) -> float:
    """The price after a discount of `percent` per cent, to the cent."""
    if not 0 <= percent <= 100:
        raise ValueError("a discount is between 0 and 100 per cent")
''' + BUG + '''


def unit_price(total: float, quantity: int) -> float:
    """The price of one unit when quantity units cost total."""
    return round(total / quantity, 2)


def cheapest(prices: list[float]) -> float:
    return min(prices) if prices else 0.0
''',
    "receipts.py": '''"""Receipts: the lines a customer is sent after paying."""

from shop import catalog, currency


def lines(cart: dict, currency_code: str = "EUR") -> list[str]:
    """One line per cart line: quantity, name, and what it costs."""
    out = []
    for line in cart["lines"]:
        item = catalog.PRODUCTS[line["sku"]]
        amount = item["price"] * line["quantity"]
        out.append(f"{line['quantity']} x {item['name']}: {currency.shown(amount, currency_code)}")
    return out


def receipt(cart: dict, paid: float, currency_code: str = "EUR") -> str:
    body = "\\n".join(lines(cart, currency_code))
    return f"{body}\\nPaid: {currency.shown(paid, currency_code)}"
''',
    "shipping.py": '''"""Shipping: a price by weight band and destination."""

BANDS = [(0.5, 4.90), (2.0, 6.90), (10.0, 12.90)]  # (up to kg, euros)
ABROAD = 1.5  # outside Germany, shipping costs half as much again
FREE_FROM = 50.0  # euros of goods: shipping is free from here


def cost(weight_kg: float, country: str, goods: float = 0.0) -> float:
    """What shipping costs for a parcel of weight_kg to country."""
    if goods >= FREE_FROM:
        return 0.0
    for limit, price in BANDS:
        if weight_kg <= limit:
            return round(price * (1 if country == "DE" else ABROAD), 2)
    raise ValueError(f"a parcel of {weight_kg} kg is too heavy to ship")
''',
    "tax.py": '''"""Value-added tax by country, added on top of net prices."""

RATES = {"DE": 0.19, "GB": 0.20, "CH": 0.081, "FR": 0.20}


def rate(country: str) -> float:
    """The VAT rate of a country; 0 where we charge none."""
    return RATES.get(country, 0.0)


def with_tax(amount: float, country: str) -> float:
    """A net amount with the country's VAT added, to the cent."""
    return round(amount * (1 + rate(country)), 2)


def tax_part(gross: float, country: str) -> float:
    """How much of a gross amount is tax."""
    return round(gross - gross / (1 + rate(country)), 2)
''',
}


def make_shop(folder: Path) -> Path:
    """Write the package into folder/shop (again, as it was, if it is there); returns folder."""
    package = Path(folder) / "shop"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text('"""A small tea shop."""\n', encoding="utf-8")
    for name, text in MODULES.items():
        (package / name).write_text(text, encoding="utf-8")
    return Path(folder)


def bug_line() -> int:
    """The line number of the bug in shop/pricing.py."""
    return MODULES["pricing.py"].split("\n").index(BUG) + 1


def bug_fixed(folder: Path) -> bool:
    """Does shop/pricing.py in folder take 10% off a price with a 10% discount now? Its code
    is run afresh (compiled here, so no __pycache__ is written beside it for a later listing
    to show)."""
    path = Path(folder) / "shop" / "pricing.py"
    namespace = {"__name__": "shop_pricing_check"}
    try:
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
        return namespace["discounted"](100.0, 10) == 90.0
    except Exception:
        return False

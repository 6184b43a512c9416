-- Production schema (PostgreSQL).

CREATE TABLE authors (
    id          BIGSERIAL PRIMARY KEY,
    name        TEXT NOT NULL,
    country     CHAR(2)
);

CREATE TABLE books (
    isbn        CHAR(13) PRIMARY KEY,
    title       TEXT NOT NULL,
    author_id   BIGINT NOT NULL REFERENCES authors(id),
    price_cents INTEGER NOT NULL CHECK (price_cents >= 0),
    stock       INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE orders (
    id              UUID PRIMARY KEY,
    customer_email  TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'shipped', 'cancelled', 'refunded')),
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    coupon          TEXT
);

CREATE TABLE order_lines (
    order_id    UUID NOT NULL REFERENCES orders(id) ON DELETE CASCADE,
    isbn        CHAR(13) NOT NULL REFERENCES books(isbn),
    quantity    INTEGER NOT NULL CHECK (quantity > 0),
    unit_cents  INTEGER NOT NULL,
    PRIMARY KEY (order_id, isbn)
);

CREATE INDEX orders_created ON orders(created_at);
CREATE INDEX orders_customer ON orders(customer_email);

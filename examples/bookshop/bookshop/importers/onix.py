"""Import ONIX 3.0 product feeds (the book trade's XML format)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from decimal import Decimal

NS = {"onix": "http://ns.editeur.org/onix/3.0/reference"}


def parse_products(xml_text: str) -> list[dict[str, object]]:
    """Extract ISBN, title, contributor and price from each <Product> of an ONIX feed."""
    root = ET.fromstring(xml_text)
    products = []
    for product in root.findall("onix:Product", NS):
        isbn = product.findtext("onix:ProductIdentifier[onix:ProductIDType='15']/onix:IDValue", namespaces=NS)
        title = product.findtext(".//onix:TitleElement/onix:TitleText", namespaces=NS)
        author = product.findtext(".//onix:Contributor/onix:PersonName", namespaces=NS)
        amount = product.findtext(".//onix:Price/onix:PriceAmount", namespaces=NS)
        products.append({"isbn": isbn, "title": title, "author": author,
                         "price": Decimal(amount) if amount else None})
    return products

import urllib.request

from scaleprobe.framework.cluster import cluster_client


def test_embedded_cluster_serves_its_dashboard_and_joins_by_address(capsys):
    with cluster_client(workers=1, dashboard_address=":0") as client:
        assert len(client.scheduler_info()["workers"]) == 1
        link = client.dashboard_link
        # the first /status renders a bokeh document: seconds on a loaded host
        assert urllib.request.urlopen(link, timeout=120).status == 200
        address = client.scheduler.address
        with cluster_client(address=address, announce=False) as other:
            assert other.submit(sum, [1, 2, 3]).result() == 6
    assert f"Dask dashboard at {link}" in capsys.readouterr().err
